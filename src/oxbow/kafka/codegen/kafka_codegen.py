#!/usr/bin/env python3
"""Generates Oxbow's Kafka request/response codec from Kafka's own message definitions.

Reads common/message/<Name>{Request,Response}.json out of the kafka-clients jar (a zip; the
JSON carries // comment lines, stripped before parsing) for each API listed in apis.inc, and
writes one header and one source: a struct per message (nested structures as member structs),
with Read/Write for exactly the versions Oxbow advertises. Standard library only: CMake runs it
with the system python3 at build time (docs/kafka.md#codec).

Usage: kafka_codegen.py <kafka-clients.jar> <apis.inc> <out.h> <out.cc>
"""

import copy
import json
import re
import sys
import zipfile

HEADER_INCLUDE = "oxbow/kafka/messages_generated.h"
CPP_KEYWORDS = {"default", "delete", "new", "operator", "class", "namespace", "template",
                "this", "union", "private", "public", "protected", "register", "switch"}
SCALARS = {  # JSON type: (C++ type, Reader call, Writer call)
    "bool": ("bool", "Bool", "Bool"),
    "int8": ("int8_t", "Int8", "Int8"),
    "int16": ("int16_t", "Int16", "Int16"),
    "int32": ("int32_t", "Int32", "Int32"),
    "int64": ("int64_t", "Int64", "Int64"),
    "uint32": ("uint32_t", "UInt32", "UInt32"),
    "uuid": ("Uuid", "ReadUuid", "WriteUuid"),
}
INT_LIMITS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


class Versions:
    """A version range ("3+", "0-12", "7", "none") clamped to the generated versions."""

    def __init__(self, spec, lo, hi):
        spec = (spec or "none").strip()
        if spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), hi
        elif "-" in spec:
            a, b = spec.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(spec)
        self.lo, self.hi = max(self.lo, lo), min(self.hi, hi)
        self.all_lo, self.all_hi = lo, hi

    def empty(self):
        return self.lo > self.hi

    def always(self):
        return self.lo == self.all_lo and self.hi == self.all_hi

    def condition(self):
        """A C++ condition on `version`, or None when it holds for every generated version."""
        if self.empty():
            return "false"
        if self.always():
            return None
        parts = []
        if self.lo > self.all_lo:
            parts.append(f"version >= {self.lo}")
        if self.hi < self.all_hi:
            parts.append(f"version <= {self.hi}")
        return " && ".join(parts)


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()
    return s + "_" if s in CPP_KEYWORDS else s


def load_json(jar, path):
    text = jar.read(path).decode("utf-8")
    return json.loads("\n".join(line for line in text.splitlines()
                                if not line.lstrip().startswith("//")))


def parse_apis(path):
    """The KAFKA_API(Name, key, min, max, first_flexible) lines of apis.inc."""
    pattern = re.compile(r"^KAFKA_API\((\w+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)")
    apis = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = pattern.match(line.strip())
            if m:
                apis.append((m.group(1), *(int(g) for g in m.groups()[1:])))
    if not apis:
        sys.exit(f"kafka_codegen: no KAFKA_API lines in {path}")
    return apis


class Field:
    def __init__(self, spec, lo, hi, structs, owned):
        self.owned = owned  # records of a response own their bytes; a request's borrow the frame's
        self.name = spec["name"]
        self.member = snake(self.name)
        self.type = spec["type"]
        self.versions = Versions(spec.get("versions"), lo, hi)
        self.nullable = Versions(spec.get("nullableVersions"), lo, hi)
        self.nullable.lo = max(self.nullable.lo, self.versions.lo)
        self.nullable.hi = min(self.nullable.hi, self.versions.hi)
        self.tagged = Versions(spec.get("taggedVersions"), lo, hi)
        self.tag = spec.get("tag")
        self.default = None if spec.get("default") is None else str(spec["default"]).lower()
        self.is_array = self.type.startswith("[]")
        self.element = self.type[2:] if self.is_array else self.type
        self.is_struct = self.element not in SCALARS and self.element not in (
            "string", "bytes", "records")
        if self.is_struct and "fields" in spec and all(s.name != self.element for s in structs):
            structs.append(Struct(self.element, spec["fields"], lo, hi, structs, owned))
        self.error_code = self.name == "ErrorCode" and self.type == "int16"

    def nullable_in_all_versions(self):
        return self.nullable.lo <= self.versions.lo and self.nullable.hi >= self.versions.hi

    def element_cpp(self):
        if self.is_struct:
            return self.element
        if self.element == "string":
            return "std::string"
        if self.element == "bytes":
            return "std::string"
        if self.element == "records":
            return "std::string" if self.owned else "std::string_view"
        if self.error_code:
            return "ErrorCode"
        return SCALARS[self.element][0]

    def cpp_type(self):
        t = self.element_cpp()
        if self.is_array:
            t = f"std::vector<{t}>"
        if not self.nullable.empty():
            t = f"std::optional<{t}>"
        return t

    def default_expr(self):
        """The initializer of the member, from the JSON default (or the type's zero)."""
        d = self.default
        if not self.nullable.empty() and d in (None, "null"):
            return "std::nullopt"  # Oxbow's choice where Kafka names no default: null
        if self.is_array or self.is_struct:
            return "{}"
        if self.element in ("string", "bytes", "records"):
            if d in (None, "", "null"):
                return "{}"
            return json.dumps(d)
        if self.error_code:
            return "ErrorCode::kNone" if d in (None, "0") else f"static_cast<ErrorCode>({d})"
        if self.element == "bool":
            return "true" if d == "true" else "false"
        if self.element == "uuid":
            return "Uuid{}"
        if d is None:
            return "0"
        value = int(d, 0)
        bits = INT_LIMITS.get(self.element)
        if bits and value == -(1 << bits):
            return f"{SCALARS[self.element][0]}{{-{(1 << bits) - 1} - 1}}"
        if bits and value > (1 << bits) - 1:
            sys.exit(f"kafka_codegen: default {d} of {self.name} does not fit {self.element}")
        suffix = "LL" if self.element == "int64" else ""
        return f"{value}{suffix}"


class Struct:
    def __init__(self, name, fields, lo, hi, structs, owned):
        self.name = name
        self.fields = []
        for spec in fields:
            field = Field(spec, lo, hi, structs, owned)
            if not field.versions.empty():
                self.fields.append(field)


def used_dependencies_first(structs, top):
    """The structures `top` uses, each after those its own fields use (a common struct may use one
    listed after it); one only versions past those served use is left out."""
    by_name = {s.name: s for s in structs}
    ordered, placed = [], set()

    def place(s):
        if s.name in placed:
            return
        placed.add(s.name)
        for f in s.fields:
            if f.is_struct and f.element in by_name:
                place(by_name[f.element])
        ordered.append(s)

    place(top)
    return ordered[:-1]


class Message:
    def __init__(self, spec, lo, hi, first_flexible):
        self.name = spec["name"]
        self.lo, self.hi = lo, hi
        self.structs = []  # nested structures, innermost first
        owned = spec["type"] == "response"
        for common in spec.get("commonStructs", []):
            self.structs.append(
                Struct(common["name"], common["fields"], lo, hi, self.structs, owned))
        self.top = Struct(self.name, spec["fields"], lo, hi, self.structs, owned)
        self.structs = used_dependencies_first(self.structs, self.top)
        self.flexible = Versions(spec.get("flexibleVersions"), lo, hi)
        defined = {s.name for s in self.structs}
        for s in self.structs + [self.top]:
            for f in s.fields:
                if f.is_struct and f.element not in defined:
                    sys.exit(f"kafka_codegen: {self.name}.{f.name} has type {f.type}, which is "
                             "neither a type the generator knows nor a structure defined here")
        expected = first_flexible if first_flexible <= hi else None
        actual = None if self.flexible.empty() else self.flexible.lo
        if expected != actual:
            sys.exit(f"kafka_codegen: {self.name} is flexible from {actual}, apis.inc says "
                     f"{first_flexible}")


def guarded(cond, body, indent):
    if cond is None:
        return [indent + line for line in body]
    return [f"{indent}if ({cond}) {{"] + [indent + "  " + line for line in body] + [
        f"{indent}}}"]


def read_value(f, target, reader, nullable_cond):
    """Statements that read one value of field `f` (not an array) into `target`."""
    e = f.element
    if f.is_struct:
        return [f"ReadStruct({reader}, version, {target});"]
    if e in ("string",):
        if nullable_cond == "true":
            return [f"{target} = {reader}.NullableString(flexible);"]
        if f.nullable.empty():
            return [f"{target} = {reader}.String(flexible);"]
        return [f"{target} = ({nullable_cond}) ? {reader}.NullableString(flexible) "
                f": std::optional<std::string>({reader}.String(flexible));"]
    if e == "bytes" or e == "records" and f.owned:
        if nullable_cond == "true":
            return [f"if (auto bytes = {reader}.NullableBytes(flexible)) "
                    f"{target} = std::string(*bytes);"]
        if f.nullable.empty():
            return [f"{target} = std::string({reader}.Bytes(flexible));"]
        return [f"if (auto bytes = ({nullable_cond}) ? {reader}.NullableBytes(flexible) "
                f": std::optional({reader}.Bytes(flexible))) {{",
                f"  {target} = std::string(*bytes);", "}"]
    if e == "records":
        if nullable_cond == "true":
            return [f"{target} = {reader}.NullableBytes(flexible);"]
        if f.nullable.empty():
            return [f"{target} = {reader}.Bytes(flexible);"]
        return [f"{target} = ({nullable_cond}) ? {reader}.NullableBytes(flexible) "
                f": std::optional({reader}.Bytes(flexible));"]
    call = f"{reader}.{SCALARS[e][1]}()"
    if f.error_code:
        call = f"static_cast<ErrorCode>({call})"
    return [f"{target} = {call};"]


def read_field(f, reader):
    if f.nullable.empty():
        nullable_cond = "false"
    elif f.nullable_in_all_versions():
        nullable_cond = "true"
    else:
        nullable_cond = f.nullable.condition()
    target = f"m.{f.member}"
    if not f.is_array:
        if f.is_struct and not f.nullable.empty():
            return [f"if ({reader}.Int8() >= 0) ReadStruct({reader}, version, {target}.emplace());"]
        return read_value(f, target, reader, nullable_cond)
    lines = [f"const int32_t n = {reader}.ArrayLength(flexible, {nullable_cond});"]
    vec = target
    if not f.nullable.empty():
        lines.append(f"if (n >= 0) {target}.emplace();")
        vec = f"(*{target})"
    lines += [f"for (int32_t i = 0; i < n && {reader}.ok(); ++i) {{",
              f"  auto& item = {vec}.emplace_back();"]
    element = copy.copy(f)  # the elements themselves are never null
    element.nullable = Versions("none", 0, 0)
    lines += ["  " + line for line in read_value(element, "item", reader, "false")]
    lines.append("}")
    return lines


def write_value(f, value, w):
    e = f.element
    if f.is_struct:
        return [f"WriteStruct({w}, version, {value});"]
    if e == "string":
        return [f"{w}.String({value}, flexible);"]
    if e in ("bytes", "records"):
        return [f"{w}.Bytes({value}, flexible);"]
    if f.error_code:
        return [f"{w}.Int16(static_cast<int16_t>({value}));"]
    return [f"{w}.{SCALARS[e][2]}({value});"]


def write_field(f, w="w"):
    """Statements that write field `f`; a null in a version where the field is not nullable
    is written as the empty value."""
    target = f"m.{f.member}"
    nullable = not f.nullable.empty()
    if nullable and not f.nullable_in_all_versions():
        plain = copy.copy(f)
        plain.nullable = Versions("none", 0, 0)
        if f.is_struct and not f.is_array:
            sys.exit(f"kafka_codegen: {f.name} is a struct nullable in some versions only")
        if not f.is_array:
            inner = write_value(plain, f"{target}.value_or(decltype({target})::value_type{{}})", w)
        else:
            size = f"static_cast<int32_t>({target} ? {target}->size() : 0)"
            inner = [f"{w}.ArrayLength({size}, flexible);",
                     f"if ({target}) {{",
                     f"  for (const auto& item : *{target}) {{"]
            inner += ["    " + line for line in write_value(plain, "item", w)]
            inner += ["  }", "}"]
        return ([f"if ({f.nullable.condition()}) {{"]
                + ["  " + line for line in write_nullable(f, target, w)]
                + ["} else {"] + ["  " + line for line in inner] + ["}"])
    return write_nullable(f, target, w) if nullable else write_plain(f, target, w)


def write_plain(f, target, w):
    if not f.is_array:
        return write_value(f, target, w)
    return [f"{w}.ArrayLength(static_cast<int32_t>({target}.size()), flexible);",
            f"for (const auto& item : {target}) {{"] + [
            "  " + line for line in write_value(f, "item", w)] + ["}"]


def write_nullable(f, target, w):
    if f.is_struct and not f.is_array:
        return [f"{w}.Int8({target} ? 1 : -1);",
                f"if ({target}) WriteStruct({w}, version, *{target});"]
    if f.element == "string" and not f.is_array:
        return [f"{w}.NullableString({target}, flexible);"]
    if not f.is_array:
        return [f"{w}.NullableBytes({target} ? std::optional<std::string_view>(*{target}) "
                f": std::nullopt, flexible);"]
    return [f"if (!{target}) {{", f"  {w}.ArrayLength(-1, flexible);", "} else {"] + [
        "  " + line for line in write_plain(f, f"(*{target})", w)] + ["}"]


def is_default_expr(f):
    """A C++ condition that holds when the member holds its default (tagged fields are sent
    only otherwise)."""
    target = f"m.{f.member}"
    d = f.default_expr()
    if d == "std::nullopt":
        return f"!{target}.has_value()"
    if d == "{}":
        return f"{target} == decltype({target}){{}}"
    return f"{target} == {d}"


def struct_functions(s, msg):
    flex = msg.flexible.condition()
    flex_expr = "false" if msg.flexible.empty() else (flex or "true")
    tagged = sorted((f for f in s.fields if not f.tagged.empty()), key=lambda f: f.tag)
    regular = [f for f in s.fields if f.tagged.empty()]
    q = f"{msg.name}::{s.name}" if s is not msg.top else msg.name

    read = [f"void ReadStruct(Reader& r, [[maybe_unused]] int16_t version, {q}& m) {{"]
    read.append(f"  [[maybe_unused]] const bool flexible = {flex_expr};")
    for f in regular:
        cond = f.versions.condition()
        lines = read_field(f, "r")
        if cond is None and f.is_array:  # a block of its own for its element count
            lines = ["{"] + ["  " + line for line in lines] + ["}"]
        read += guarded(cond, lines, "  ")
    if not msg.flexible.empty():
        body = ["ReadTaggedFields(r, [&](uint32_t tag, Reader& field) {"]
        for f in tagged:
            cond = f"tag == {f.tag}"
            if f.tagged.condition():
                cond += f" && {f.tagged.condition()}"
            body += [f"  if ({cond}) {{"]
            body += ["    " + line for line in read_field(f, "field")]
            body += ["    return true;", "  }"]
        body += ["  return false;", "});"]
        if not tagged:
            body = ["ReadTaggedFields(r, [](uint32_t, Reader&) { return false; });"]
        read += guarded("flexible" if flex else None, body, "  ")
    read.append("}")

    write = [f"void WriteStruct(Writer& w, [[maybe_unused]] int16_t version, const {q}& m) {{"]
    write.append(f"  [[maybe_unused]] const bool flexible = {flex_expr};")
    for f in regular:
        write += guarded(f.versions.condition(), write_field(f), "  ")
    if not msg.flexible.empty():
        if not tagged:
            body = ["w.UnsignedVarint(0);"]
        else:
            body = ["Writer tags;", "uint32_t count = 0;"]
            for f in tagged:
                cond = f"{f.tagged.condition() or 'true'} && !({is_default_expr(f)})"
                inner = ["Writer field;"] + write_field(f, "field")
                inner += [f"tags.UnsignedVarint({f.tag});",
                          "tags.UnsignedVarint(static_cast<uint32_t>(field.size()));",
                          "tags.Raw(field.buffer());", "++count;"]
                body += guarded(cond, inner, "")
            body += ["w.UnsignedVarint(count);", "w.Raw(tags.buffer());"]
        write += guarded("flexible" if flex else None, body, "  ")
    write.append("}")
    return read, write


def struct_declaration(s, indent):
    lines = [f"{indent}struct {s.name} {{"]
    for f in s.fields:
        lines.append(f"{indent}  {f.cpp_type()} {f.member} = {f.default_expr()};")
    lines.append(f"{indent}  bool operator==(const {s.name}&) const = default;")
    lines.append(f"{indent}}};")
    return lines


def generate(jar_path, apis_path):
    jar = zipfile.ZipFile(jar_path)
    messages = []
    for name, key, lo, hi, first_flexible in parse_apis(apis_path):
        for kind in ("Request", "Response"):
            spec = load_json(jar, f"common/message/{name}{kind}.json")
            if spec["apiKey"] != key:
                sys.exit(f"kafka_codegen: {name}{kind} has key {spec['apiKey']}, not {key}")
            messages.append((key, Message(spec, lo, hi, first_flexible)))

    h = ["// Generated by src/oxbow/kafka/codegen/kafka_codegen.py from kafka-clients' "
         "common/message/*.json: do not edit.", "#pragma once", "",
         "#include <cstdint>", "#include <optional>", "#include <string>",
         "#include <string_view>", "#include <vector>", "",
         '#include "oxbow/kafka/api.h"', '#include "oxbow/kafka/wire.h"', "",
         "namespace oxbow::kafka::msg {", ""]
    cc = ["// Generated by src/oxbow/kafka/codegen/kafka_codegen.py: do not edit.",
          f'#include "{HEADER_INCLUDE}"', "", "namespace oxbow::kafka::msg {",
          "namespace {", ""]
    public = []
    for key, msg in messages:
        h.append(f"struct {msg.name} {{")
        h.append(f"  static constexpr ApiKey kApiKey = static_cast<ApiKey>({key});")
        h.append(f"  static constexpr int16_t kMinVersion = {msg.lo};")
        h.append(f"  static constexpr int16_t kMaxVersion = {msg.hi};")
        for s in msg.structs:
            h += struct_declaration(s, "  ")
        for f in msg.top.fields:
            h.append(f"  {f.cpp_type()} {f.member} = {f.default_expr()};")
        h.append(f"  bool operator==(const {msg.name}&) const = default;")
        h += ["};",
              f"// Reads a {msg.name} of `version`; problems are recorded in the reader.",
              f"void Read(Reader& r, int16_t version, {msg.name}& m);",
              f"void Write(Writer& w, int16_t version, const {msg.name}& m);", ""]
        for s in msg.structs + [msg.top]:
            read, write = struct_functions(s, msg)
            cc += read + [""] + write + [""]
        public += [f"void Read(Reader& r, int16_t version, {msg.name}& m) {{",
                   f"  if (version < {msg.lo} || version > {msg.hi}) {{",
                   f'    r.Fail("{msg.name} v" + std::to_string(version) + " is not served");',
                   "    return;", "  }", "  ReadStruct(r, version, m);", "}", "",
                   f"void Write(Writer& w, int16_t version, const {msg.name}& m) {{",
                   "  WriteStruct(w, version, m);", "}", ""]
    h.append("}  // namespace oxbow::kafka::msg")
    cc += ["}  // namespace", ""] + public + ["}  // namespace oxbow::kafka::msg"]
    return "\n".join(h) + "\n", "\n".join(cc) + "\n"


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    header, source = generate(sys.argv[1], sys.argv[2])
    write_if_changed(sys.argv[3], header)
    write_if_changed(sys.argv[4], source)


if __name__ == "__main__":
    main()

// The pure parts of the S3 client: URIs, URLs, XML answers, errors and the credentials file.
#include <curl/curl.h>

#include <cctype>

#include "oxbow/common/parse.h"
#include "oxbow/storage/s3_internal.h"

namespace oxbow::storage {

namespace {

constexpr int kMaxXmlDepth = 32;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// Appends `raw` with its entity references decoded.
Status DecodeText(std::string_view raw, std::string* out) {
  while (!raw.empty()) {
    size_t amp = raw.find('&');
    out->append(raw.substr(0, amp));
    if (amp == std::string_view::npos) break;
    raw.remove_prefix(amp);
    size_t semi = raw.find(';');
    if (semi == std::string_view::npos || semi > 12) {
      return Status::Invalid("XML: unterminated entity reference");
    }
    std::string_view name = raw.substr(1, semi - 1);
    raw.remove_prefix(semi + 1);
    if (name == "lt") {
      out->push_back('<');
    } else if (name == "gt") {
      out->push_back('>');
    } else if (name == "amp") {
      out->push_back('&');
    } else if (name == "quot") {
      out->push_back('"');
    } else if (name == "apos") {
      out->push_back('\'');
    } else if (name.size() >= 2 && name[0] == '#') {
      const bool hex = name[1] == 'x';
      std::string_view digits = name.substr(hex ? 2 : 1);
      if (digits.empty()) return Status::Invalid("XML: empty character reference");
      uint32_t cp = 0;
      for (char c : digits) {
        int d;
        if (c >= '0' && c <= '9') {
          d = c - '0';
        } else if (hex && c >= 'a' && c <= 'f') {
          d = c - 'a' + 10;
        } else if (hex && c >= 'A' && c <= 'F') {
          d = c - 'A' + 10;
        } else {
          return Status::Invalid("XML: bad character reference");
        }
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
        if (cp > 0x10ffff) return Status::Invalid("XML: character reference out of range");
      }
      if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff)) {
        return Status::Invalid("XML: character reference out of range");
      }
      AppendUtf8(cp, out);
    } else {
      return Status::Invalid("XML: unknown entity &" + std::string(name) + ";");
    }
  }
  return Status::OK();
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

class XmlParser {
 public:
  explicit XmlParser(std::string_view doc) : doc_(doc) {}

  Result<XmlElement> Document() {
    RETURN_NOT_OK(SkipMisc());
    if (AtEnd() || doc_[pos_] != '<') return Status::Invalid("XML: no root element");
    XmlElement root;
    RETURN_NOT_OK(Element(&root, 0));
    RETURN_NOT_OK(SkipMisc());
    if (!AtEnd()) return Status::Invalid("XML: content after the root element");
    return root;
  }

 private:
  bool AtEnd() const { return pos_ >= doc_.size(); }
  std::string_view Rest() const { return doc_.substr(pos_); }

  void SkipSpace() {
    while (!AtEnd() && std::isspace(static_cast<unsigned char>(doc_[pos_]))) ++pos_;
  }

  // Skips `open` ... `close`; Invalid when `close` never comes.
  Status SkipPast(std::string_view close) {
    size_t end = doc_.find(close, pos_);
    if (end == std::string_view::npos) return Status::Invalid("XML: unterminated construct");
    pos_ = end + close.size();
    return Status::OK();
  }

  // Whitespace, processing instructions and comments around the root.
  Status SkipMisc() {
    for (;;) {
      SkipSpace();
      if (StartsWith(Rest(), "<?")) {
        RETURN_NOT_OK(SkipPast("?>"));
      } else if (StartsWith(Rest(), "<!--")) {
        RETURN_NOT_OK(SkipPast("-->"));
      } else if (StartsWith(Rest(), "<!")) {
        return Status::Invalid("XML: DOCTYPE is not accepted");
      } else {
        return Status::OK();
      }
    }
  }

  Result<std::string> Name() {
    size_t start = pos_;
    while (!AtEnd() && IsNameChar(doc_[pos_])) ++pos_;
    if (pos_ == start) return Status::Invalid("XML: expected a name");
    std::string_view name = doc_.substr(start, pos_ - start);
    return std::string(name);
  }

  static std::string LocalName(const std::string& name) {
    size_t colon = name.rfind(':');
    return colon == std::string::npos ? name : name.substr(colon + 1);
  }

  // At '<' of a start tag.
  Status Element(XmlElement* element, int depth) {
    if (depth >= kMaxXmlDepth) return Status::Invalid("XML: nested too deeply");
    ++pos_;
    ASSIGN_OR_RAISE(std::string name, Name());
    element->name = LocalName(name);
    // Attributes: name="value" or name='value', skipped.
    for (;;) {
      SkipSpace();
      if (AtEnd()) return Status::Invalid("XML: unterminated start tag");
      if (StartsWith(Rest(), "/>")) {
        pos_ += 2;
        return Status::OK();
      }
      if (doc_[pos_] == '>') {
        ++pos_;
        break;
      }
      RETURN_NOT_OK(Name().status());
      SkipSpace();
      if (AtEnd() || doc_[pos_] != '=') return Status::Invalid("XML: attribute without value");
      ++pos_;
      SkipSpace();
      if (AtEnd() || (doc_[pos_] != '"' && doc_[pos_] != '\'')) {
        return Status::Invalid("XML: unquoted attribute value");
      }
      const char quote = doc_[pos_++];
      size_t end = doc_.find(quote, pos_);
      if (end == std::string_view::npos) return Status::Invalid("XML: unterminated attribute");
      pos_ = end + 1;
    }
    // Content up to the matching end tag.
    for (;;) {
      if (AtEnd()) return Status::Invalid("XML: element <" + name + "> is not closed");
      size_t lt = doc_.find('<', pos_);
      if (lt == std::string_view::npos) {
        return Status::Invalid("XML: element <" + name + "> is not closed");
      }
      RETURN_NOT_OK(DecodeText(doc_.substr(pos_, lt - pos_), &element->text));
      pos_ = lt;
      if (StartsWith(Rest(), "</")) {
        pos_ += 2;
        ASSIGN_OR_RAISE(std::string end_name, Name());
        if (end_name != name) {
          return Status::Invalid("XML: </" + end_name + "> closes <" + name + ">");
        }
        SkipSpace();
        if (AtEnd() || doc_[pos_] != '>') return Status::Invalid("XML: unterminated end tag");
        ++pos_;
        return Status::OK();
      }
      if (StartsWith(Rest(), "<!--")) {
        RETURN_NOT_OK(SkipPast("-->"));
      } else if (StartsWith(Rest(), "<![CDATA[")) {
        pos_ += 9;
        size_t end = doc_.find("]]>", pos_);
        if (end == std::string_view::npos) return Status::Invalid("XML: unterminated CDATA");
        element->text.append(doc_.substr(pos_, end - pos_));
        pos_ = end + 3;
      } else if (StartsWith(Rest(), "<?")) {
        RETURN_NOT_OK(SkipPast("?>"));
      } else if (StartsWith(Rest(), "<!")) {
        return Status::Invalid("XML: DOCTYPE is not accepted");
      } else {
        element->children.emplace_back();
        RETURN_NOT_OK(Element(&element->children.back(), depth + 1));
      }
    }
  }

  std::string_view doc_;
  size_t pos_ = 0;
};

// S3's <Error><Code>..</Code><Message>..</Message></Error>, when the body is one.
std::pair<std::string, std::string> ErrorCodeAndMessage(std::string_view body) {
  auto xml = ParseXml(body);
  if (!xml.ok() || xml->name != "Error") return {};
  return {xml->ChildText("Code"), xml->ChildText("Message")};
}

}  // namespace

Result<S3Location> ParseS3Uri(std::string_view uri) {
  if (!IsS3Uri(uri)) return Status::Invalid("not an s3:// URI: '" + std::string(uri) + "'");
  std::string_view rest = uri.substr(5);
  size_t slash = rest.find('/');
  S3Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) location.key = std::string(rest.substr(slash + 1));
  while (!location.key.empty() && location.key.back() == '/') location.key.pop_back();
  if (location.bucket.empty()) return Status::Invalid("no bucket in '" + std::string(uri) + "'");
  for (char c : location.bucket) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      return Status::Invalid("bucket name '" + location.bucket + "' of '" + std::string(uri) +
                             "' may hold only a-z, 0-9, '-' and '.'");
    }
  }
  return location;
}

bool IsS3Uri(std::string_view path) { return StartsWith(path, "s3://"); }

std::string UriEncode(std::string_view s, bool encode_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<std::string> ObjectUrl(const S3Options& options, std::string_view bucket,
                              std::string_view key, std::string_view query) {
  std::string endpoint = options.endpoint.empty()
                             ? "https://s3." + options.region + ".amazonaws.com"
                             : options.endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  size_t scheme_end = endpoint.find("://");
  if (scheme_end == std::string::npos ||
      (endpoint.substr(0, scheme_end) != "http" && endpoint.substr(0, scheme_end) != "https")) {
    return Status::Invalid("S3 endpoint '" + endpoint + "' must start with http:// or https://");
  }
  std::string url;
  if (options.path_style) {
    url = endpoint + "/" + std::string(bucket);
  } else {
    if (bucket.find('.') != std::string_view::npos) {
      return Status::Invalid("bucket '" + std::string(bucket) +
                             "' holds a '.', which virtual-host addressing cannot name over TLS: "
                             "use path-style addressing");
    }
    url = endpoint.substr(0, scheme_end + 3) + std::string(bucket) + "." +
          endpoint.substr(scheme_end + 3);
  }
  url += "/";
  url += UriEncode(key, /*encode_slash=*/false);
  if (!query.empty()) {
    url += "?";
    url += query;
  }
  return url;
}

std::string SigV4Provider(const S3Options& options) { return "aws:amz:" + options.region + ":s3"; }

const XmlElement* XmlElement::Child(std::string_view child_name) const {
  for (const auto& child : children) {
    if (child.name == child_name) return &child;
  }
  return nullptr;
}

std::string XmlElement::ChildText(std::string_view child_name) const {
  const XmlElement* child = Child(child_name);
  return child ? child->text : std::string();
}

Result<XmlElement> ParseXml(std::string_view document) { return XmlParser(document).Document(); }

Result<ListPage> ParseListObjectsV2(std::string_view xml) {
  ASSIGN_OR_RAISE(XmlElement root, ParseXml(xml));
  if (root.name != "ListBucketResult") {
    return Status::Invalid("S3 list answer is <" + root.name + ">, not <ListBucketResult>");
  }
  ListPage page;
  for (const auto& child : root.children) {
    if (child.name == "Contents") {
      ListedObject object;
      object.key = child.ChildText("Key");
      if (object.key.empty()) return Status::Invalid("S3 list answer: <Contents> without <Key>");
      auto size = ParseInt64(Trim(child.ChildText("Size")));
      if (!size.ok() || *size < 0) {
        return Status::Invalid("S3 list answer: bad <Size> of '" + object.key + "'");
      }
      object.size = *size;
      page.objects.push_back(std::move(object));
    } else if (child.name == "CommonPrefixes") {
      page.common_prefixes.push_back(child.ChildText("Prefix"));
    }
  }
  if (Trim(root.ChildText("IsTruncated")) == "true") {
    page.next_continuation_token = root.ChildText("NextContinuationToken");
    if (page.next_continuation_token.empty()) {
      return Status::Invalid("S3 list answer is truncated but has no <NextContinuationToken>");
    }
  }
  return page;
}

Result<std::string> ParseUploadId(std::string_view xml) {
  ASSIGN_OR_RAISE(XmlElement root, ParseXml(xml));
  std::string id = root.name == "InitiateMultipartUploadResult" ? root.ChildText("UploadId") : "";
  if (id.empty()) return Status::Invalid("S3 answer to CreateMultipartUpload has no <UploadId>");
  return id;
}

Status HttpErrorToStatus(long http_status, std::string_view body, std::string_view what) {
  auto [code, message] = ErrorCodeAndMessage(body);
  std::string text = std::string(what) + ": HTTP " + std::to_string(http_status);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += ": " + message;
  if (code == "NoSuchKey" || code == "NoSuchBucket" || code == "NoSuchUpload" ||
      (code.empty() && http_status == 404)) {
    return Status::NotFound(text);
  }
  if (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken" ||
      code == "InvalidToken" || code == "TokenRefreshRequired" ||
      code == "AuthorizationHeaderMalformed" || code == "InvalidClientTokenId" ||
      code == "XAdminUserNotFound") {  // versitygw's answer (HTTP 404) to an unknown key
    return Status::Unauthenticated(text +
                                   " (S3 refused the credentials: check AWS_ACCESS_KEY_ID, "
                                   "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_REGION)");
  }
  if (code == "AccessDenied" || (code.empty() && http_status == 403)) {
    return Status::PermissionDenied(text);
  }
  if (http_status == 409 || http_status == 412) return Status::AlreadyExists(text);
  return Status::IOError(text);
}

Status CurlErrorToStatus(int curl_code, std::string_view detail, std::string_view what) {
  std::string text =
      std::string(what) + ": " + curl_easy_strerror(static_cast<CURLcode>(curl_code));
  if (!detail.empty()) text += " (" + std::string(detail) + ")";
  return Status::IOError(text);
}

bool IsRetryableHttpStatus(long http_status) {
  return http_status == 500 || http_status == 502 || http_status == 503 || http_status == 504 ||
         http_status == 429;
}

bool IsRetryableCurlError(int curl_code) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return true;
    default: return false;
  }
}

std::optional<Credentials> ParseCredentialsFile(std::string_view text, std::string_view profile) {
  Credentials credentials;
  bool in_profile = false, found = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      in_profile = line.back() == ']' && Trim(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    if (!in_profile) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = Trim(line.substr(0, eq));
    std::string value(Trim(line.substr(eq + 1)));
    if (name == "aws_access_key_id") credentials.access_key_id = value;
    if (name == "aws_secret_access_key") credentials.secret_access_key = value;
    if (name == "aws_session_token") credentials.session_token = value;
  }
  if (!found) return std::nullopt;
  return credentials;
}

}  // namespace oxbow::storage

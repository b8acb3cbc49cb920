// oxbow user add|remove|list: the users file of a data dir (docs/security.md). It works on the
// file directly; a running oxbowd reads the file again at every login and every call.
#include <iostream>

#include "oxbow/auth/auth.h"
#include "oxbow/cli/commands.h"

namespace oxbow::cli {

namespace {

struct UserArgs {
  std::string data_dir = "./data";
  std::string name;
  bool password_stdin = false;
  std::vector<std::string> grants;
};

Result<auth::UserStore> LoadUsers(const std::string& data_dir) {
  return auth::UserStore::Load(PosixFileSystem::Default(), auth::UserStore::PathIn(data_dir));
}

Status AddUser(const UserArgs& args) {
  std::vector<auth::Grant> grants;
  for (const auto& g : args.grants) {
    ASSIGN_OR_RAISE(auto grant, auth::ParseGrant(g));
    grants.push_back(std::move(grant));
  }
  std::string password;
  if (args.password_stdin) {
    std::getline(std::cin, password);
  } else if (const char* env = std::getenv("OXBOW_PASSWORD")) {
    password = env;
  } else {
    return Status::Invalid(
        "give the password on standard input (--password-stdin) or in "
        "OXBOW_PASSWORD, so it stays out of the shell history");
  }
  ASSIGN_OR_RAISE(auto users, LoadUsers(args.data_dir));
  RETURN_NOT_OK(users.Put(args.name, password, std::move(grants)));
  RETURN_NOT_OK(users.Save());
  std::cout << "user " << args.name << " saved\n";
  return Status::OK();
}

Status RemoveUser(const UserArgs& args) {
  ASSIGN_OR_RAISE(auto users, LoadUsers(args.data_dir));
  RETURN_NOT_OK(users.Remove(args.name));
  RETURN_NOT_OK(users.Save());
  std::cout << "user " << args.name << " removed\n";
  return Status::OK();
}

Status ListUsers(const UserArgs& args) {
  ASSIGN_OR_RAISE(auto users, LoadUsers(args.data_dir));
  for (const auto& u : users.users()) {
    std::cout << u.name;
    for (const auto& g : u.grants)
      std::cout << " " << g.tables << "=" << auth::AccessName(g.access);
    std::cout << "\n";
  }
  return Status::OK();
}

}  // namespace

void RegisterUserCommands(CLI::App& app) {
  auto args = std::make_shared<UserArgs>();
  auto* user = app.add_subcommand("user", "Manage the users oxbowd --auth accepts");
  user->require_subcommand(1);
  auto data_dir = [&](CLI::App* cmd) {
    cmd->add_option("--data-dir", args->data_dir, "The data dir of the server")
        ->capture_default_str();
  };
  auto* add = user->add_subcommand("add", "Add a user, or replace one's password and grants");
  data_dir(add);
  add->add_option("name", args->name, "User name")->required();
  add->add_flag("--password-stdin", args->password_stdin,
                "Read the password from the first line of standard input (else OXBOW_PASSWORD)");
  add->add_option("--grant", args->grants,
                  "<tables>=<read|write|admin>: 'shop.orders', 'shop.*' or '*'; repeatable");
  SetAction(add, [args] { return AddUser(*args); });
  auto* remove = user->add_subcommand("remove", "Remove a user; their tokens stop working");
  data_dir(remove);
  remove->add_option("name", args->name, "User name")->required();
  SetAction(remove, [args] { return RemoveUser(*args); });
  auto* list = user->add_subcommand("list", "List users and their grants");
  data_dir(list);
  SetAction(list, [args] { return ListUsers(*args); });
}

}  // namespace oxbow::cli

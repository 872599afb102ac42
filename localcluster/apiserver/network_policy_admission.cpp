#include "localcluster/apiserver/network_policy_admission.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "localcluster/apiserver/label_selector.h"

namespace sluice::apiserver {

using nlohmann::json;

namespace {

constexpr char kPortRange[] = "must be between 1 and 65535, inclusive";

// A Go string as %q prints it (the escapes port names, protocols and CIDRs can need).
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A field of the wrong JSON type (kube's decoder would refuse the body; see the header).
void TypeError(const std::string& path, const json& value, const char* expected,
               openapi::FieldErrors& errors) {
  errors.push_back({path, "Invalid value: " + value.dump() + ": must be " + expected});
}

// A metav1.LabelSelector object at `path`.
void ValidateSelector(const json& selector, const std::string& path, openapi::FieldErrors& errors) {
  if (!selector.is_object()) return TypeError(path, selector, "an object", errors);
  Result<LabelSelector> parsed = FromLabelSelectorJson(selector);
  if (!parsed.ok()) {
    const std::string field = parsed.status().field();
    errors.push_back({field.empty() ? path : path + "." + field, parsed.status().message()});
  }
}

void CheckPortNumber(int64_t port, const std::string& path, openapi::FieldErrors& errors) {
  if (port < 1 || port > 65535) {
    errors.push_back({path, "Invalid value: " + std::to_string(port) + ": " + kPortRange});
  }
}

// validation.IsValidPortName: an IANA service name of at most 15 characters.
std::vector<std::string> PortNameErrors(const std::string& name) {
  std::vector<std::string> out;
  if (name.size() > 15) out.push_back("must be no more than 15 characters");
  bool charset = !name.empty();
  bool letter = false;
  for (char c : name) {
    const bool lower = c >= 'a' && c <= 'z';
    letter = letter || lower;
    if (!lower && !(c >= '0' && c <= '9') && c != '-') charset = false;
  }
  if (!charset) {
    out.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  }
  if (!letter) out.push_back("must contain at least one letter (a-z)");
  if (name.find("--") != std::string::npos) out.push_back("must not contain consecutive hyphens");
  if (!name.empty() && (name.front() == '-' || name.back() == '-')) {
    out.push_back("must not begin or end with a hyphen");
  }
  return out;
}

// kube's ValidateNetworkPolicyPort.
void ValidatePort(const json& port, const std::string& path, openapi::FieldErrors& errors) {
  if (!port.is_object()) return TypeError(path, port, "an object", errors);
  const json protocol = port.value("protocol", json());
  if (!protocol.is_null()) {
    const std::string p = protocol.is_string() ? protocol.get<std::string>() : protocol.dump();
    if (p != "TCP" && p != "UDP" && p != "SCTP") {
      errors.push_back({path + ".protocol", "Unsupported value: " + Quote(p) +
                                                ": supported values: \"TCP\", \"UDP\", \"SCTP\""});
    }
  }
  const std::string port_path = path + ".port";
  const std::string end_path = path + ".endPort";
  const json number = port.value("port", json());
  const json end = port.value("endPort", json());
  if (!end.is_null() && !end.is_number_integer()) {
    return TypeError(end_path, end, "an integer", errors);
  }
  const std::string end_text = end.is_null() ? "" : std::to_string(end.get<int64_t>());
  if (number.is_number_integer()) {
    const int64_t n = number.get<int64_t>();
    CheckPortNumber(n, port_path, errors);
    if (!end.is_null()) {
      const int64_t e = end.get<int64_t>();
      if (e < n) {
        errors.push_back(
            {end_path, "Invalid value: " + end_text + ": must be greater than or equal to `port`"});
      }
      CheckPortNumber(e, end_path, errors);
    }
  } else if (number.is_string()) {
    if (!end.is_null()) {
      errors.push_back({end_path, "Invalid value: " + end_text +
                                      ": may not be specified when `port` is non-numeric"});
    }
    const std::string name = number.get<std::string>();
    for (const std::string& message : PortNameErrors(name)) {
      errors.push_back({port_path, "Invalid value: " + Quote(name) + ": " + message});
    }
  } else if (number.is_null()) {
    if (!end.is_null()) {
      errors.push_back({end_path, "Invalid value: " + end_text +
                                      ": may not be specified when `port` is not specified"});
    }
  } else {
    TypeError(port_path, number, "an integer or a string", errors);
  }
}

// An IP network: the address bytes (4 used for IPv4) and the prefix length.
struct Cidr {
  int family = AF_INET;
  std::array<unsigned char, 16> address{};
  int prefix = 0;
};

// "10.0.0.0/8", "2001:db8::/32"; nullopt when not a CIDR (as Go's net.ParseCIDR).
std::optional<Cidr> ParseCidr(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string ip = text.substr(0, slash);
  const std::string bits = text.substr(slash + 1);
  if (bits.empty() || bits.size() > 3) return std::nullopt;
  for (char c : bits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  Cidr cidr;
  cidr.family = ip.find(':') != std::string::npos ? AF_INET6 : AF_INET;
  if (inet_pton(cidr.family, ip.c_str(), cidr.address.data()) != 1) return std::nullopt;
  cidr.prefix = std::stoi(bits);
  if (cidr.prefix > (cidr.family == AF_INET6 ? 128 : 32)) return std::nullopt;
  return cidr;
}

// Whether the first `bits` bits of the two addresses agree.
bool SamePrefix(const Cidr& a, const Cidr& b, int bits) {
  for (int i = 0; i < bits; ++i) {
    const int shift = 7 - i % 8;
    if (((a.address[i / 8] >> shift) & 1) != ((b.address[i / 8] >> shift) & 1)) return false;
  }
  return true;
}

// kube's ValidateIPBlock (1.30): a CIDR, and excepts strictly inside it.
void ValidateIpBlock(const json& block, const std::string& path, openapi::FieldErrors& errors) {
  if (!block.is_object()) return TypeError(path, block, "an object", errors);
  const std::string cidr_path = path + ".cidr";
  const json cidr = block.value("cidr", json());
  if (cidr.is_null() || cidr == "") {
    errors.push_back({cidr_path, "Required value"});
    return;
  }
  if (!cidr.is_string()) return TypeError(cidr_path, cidr, "a string", errors);
  const std::optional<Cidr> outer = ParseCidr(cidr.get<std::string>());
  if (!outer) {
    errors.push_back(
        {cidr_path, "Invalid value: " + Quote(cidr.get<std::string>()) + ": not a valid CIDR"});
    return;
  }
  const json except = block.value("except", json());
  if (except.is_null()) return;
  if (!except.is_array()) return TypeError(path + ".except", except, "an array", errors);
  for (size_t i = 0; i < except.size(); ++i) {
    const std::string item_path = openapi::IndexPath(path + ".except", i);
    if (!except[i].is_string()) {
      TypeError(item_path, except[i], "a string", errors);
      continue;
    }
    const std::string text = except[i].get<std::string>();
    const std::optional<Cidr> inner = ParseCidr(text);
    if (!inner) {
      // As kube, the first unparsable except ends the check of this block.
      errors.push_back({item_path, "Invalid value: " + Quote(text) + ": not a valid CIDR"});
      return;
    }
    if (inner->family != outer->family || inner->prefix <= outer->prefix ||
        !SamePrefix(*outer, *inner, outer->prefix)) {
      errors.push_back(
          {item_path, "Invalid value: " + Quote(text) + ": must be a strict subset of `cidr`"});
    }
  }
}

// kube's ValidateNetworkPolicyPeer: selectors, or an ipBlock alone.
void ValidatePeer(const json& peer, const std::string& path, openapi::FieldErrors& errors) {
  if (!peer.is_object()) return TypeError(path, peer, "an object", errors);
  int peers = 0;
  for (const char* key : {"podSelector", "namespaceSelector"}) {
    const json selector = peer.value(key, json());
    if (selector.is_null()) continue;
    ++peers;
    ValidateSelector(selector, path + "." + key, errors);
  }
  const json block = peer.value("ipBlock", json());
  if (!block.is_null()) {
    ++peers;
    ValidateIpBlock(block, path + ".ipBlock", errors);
  }
  if (peers == 0) {
    errors.push_back({path, "Required value: must specify a peer"});
  } else if (peers > 1 && !block.is_null()) {
    errors.push_back({path, "Forbidden: may not specify both ipBlock and another peer"});
  }
}

// The rules of one direction: spec.ingress (peers in `from`) or spec.egress (peers in `to`).
void ValidateRules(const json& spec, const char* direction, const char* peers_key,
                   openapi::FieldErrors& errors) {
  const std::string path = std::string("spec.") + direction;
  const json rules = spec.value(direction, json());
  if (rules.is_null()) return;
  if (!rules.is_array()) return TypeError(path, rules, "an array", errors);
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string rule_path = openapi::IndexPath(path, i);
    const json& rule = rules[i];
    if (!rule.is_object()) {
      TypeError(rule_path, rule, "an object", errors);
      continue;
    }
    const json ports = rule.value("ports", json());
    if (ports.is_array()) {
      for (size_t j = 0; j < ports.size(); ++j) {
        ValidatePort(ports[j], openapi::IndexPath(rule_path + ".ports", j), errors);
      }
    } else if (!ports.is_null()) {
      TypeError(rule_path + ".ports", ports, "an array", errors);
    }
    const std::string peers_path = rule_path + "." + peers_key;
    const json peers = rule.value(peers_key, json());
    if (peers.is_array()) {
      for (size_t j = 0; j < peers.size(); ++j) {
        ValidatePeer(peers[j], openapi::IndexPath(peers_path, j), errors);
      }
    } else if (!peers.is_null()) {
      TypeError(peers_path, peers, "an array", errors);
    }
  }
}

// []networking.PolicyType{"Ingress", "Egress"}, as %#v prints the list.
std::string GoPolicyTypes(const json& types) {
  std::string out = "[]networking.PolicyType{";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quote(types[i].is_string() ? types[i].get<std::string>() : types[i].dump());
  }
  return out + "}";
}

void ValidatePolicyTypes(const json& spec, openapi::FieldErrors& errors) {
  const json types = spec.value("policyTypes", json());
  if (types.is_null()) return;
  if (!types.is_array()) return TypeError("spec.policyTypes", types, "an array", errors);
  if (types.size() > 2) {
    errors.push_back({"spec.policyTypes", "Invalid value: " + GoPolicyTypes(types) +
                                              ": may not specify more than two policyTypes"});
    return;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string type = types[i].is_string() ? types[i].get<std::string>() : types[i].dump();
    if (type != "Ingress" && type != "Egress") {
      errors.push_back(
          {openapi::IndexPath("spec.policyTypes", i),
           "Unsupported value: " + Quote(type) + ": supported values: \"Ingress\", \"Egress\""});
    }
  }
}

}  // namespace

void DefaultNetworkPolicy(json& policy) {
  if (!policy.is_object()) return;
  json& spec = policy["spec"];
  if (spec.is_null()) spec = json::object();
  if (!spec.is_object()) return;
  if (!spec.contains("podSelector") || spec["podSelector"].is_null()) {
    spec["podSelector"] = json::object();
  }
  const json types = spec.value("policyTypes", json());
  if (types.is_null() || (types.is_array() && types.empty())) {
    // A policy that names no types isolates ingress, and egress too when it has egress rules.
    json defaulted = json::array({"Ingress"});
    const json egress = spec.value("egress", json());
    if (egress.is_array() && !egress.empty()) defaulted.push_back("Egress");
    spec["policyTypes"] = std::move(defaulted);
  }
  for (const char* direction : {"ingress", "egress"}) {
    auto rules = spec.find(direction);
    if (rules == spec.end() || !rules->is_array()) continue;
    for (json& rule : *rules) {
      if (!rule.is_object()) continue;
      auto ports = rule.find("ports");
      if (ports == rule.end() || !ports->is_array()) continue;
      for (json& port : *ports) {
        if (port.is_object() && (!port.contains("protocol") || port["protocol"].is_null())) {
          port["protocol"] = "TCP";
        }
      }
    }
  }
}

openapi::FieldErrors ValidateNetworkPolicy(const json& policy) {
  openapi::FieldErrors errors;
  const json spec = policy.is_object() ? policy.value("spec", json::object()) : json();
  if (!spec.is_object()) {
    TypeError("spec", spec, "an object", errors);
    return errors;
  }
  ValidateSelector(spec.value("podSelector", json::object()), "spec.podSelector", errors);
  ValidateRules(spec, "ingress", "from", errors);
  ValidateRules(spec, "egress", "to", errors);
  ValidatePolicyTypes(spec, errors);
  return errors;
}

}  // namespace sluice::apiserver

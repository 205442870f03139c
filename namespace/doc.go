// Package namespace names the places memories live and the principals that own them.
//
// An address is one of
//
//	agent://NAME[/path]    an agent's private namespace, owned by that agent
//	team://NAME[/path]     a team namespace, shared by grant
//	project://NAME[/path]  a project namespace, shared by grant
//
// Parse turns text into a normalised Address; String turns it back, and
// Parse(a.String()) == a for every address Parse accepts. Root, Parent,
// Contains and Child navigate the hierarchy; Owner gives the default owner
// (an agent owns its own namespace and everything under it; team and project
// namespaces have no default owner and are governed by grants in package acl).
// Resolve interprets the namespace argument of an API call relative to the
// caller's agent, so a sub-agent can scope itself with "subagent/task-123".
//
// # Normalisation and limits
//
//   - Leading and trailing white space is trimmed; ASCII letters are lowercased
//     (scheme, name and path alike). Non-ASCII text is rejected rather than
//     case-folded, so no Unicode look-alike (such as the Kelvin sign, which
//     strings.ToLower maps to "k") can alias an ASCII name.
//   - NAME and each path segment use only [a-z0-9._-] and may not consist of
//     dots alone ("." and ".." and "..." are all rejected): segments may become
//     file or key names further down.
//   - The name must follow "://" directly: "agent:///bob" is rejected (empty
//     name) rather than silently read as agent://bob. Within the path,
//     repeated slashes collapse and a trailing slash is dropped:
//     "agent://bob//a/" is agent://bob/a.
//   - Limits: the trimmed input and the canonical form are at most
//     MaxAddressLen (256) bytes, NAME at most MaxNameLen (64) bytes, the path
//     at most MaxPathSegments (16) segments.
//
// Every rejection wraps ErrInvalid and says what is wrong, for example
// `namespace: invalid address "agent://": missing name`.
//
// The zero Address is invalid; it is what functions return with an error, and
// it marshals to the empty string (and the empty string unmarshals to it), so
// an optional address field round-trips through JSON or msgpack as "".
//
// # Principals
//
// A principal is an agent root address (agent://NAME, no path). ParsePrincipal
// accepts "agent://bob" or a bare "bob". SanitizeName derives a valid agent
// name from arbitrary text such as a host or user name.
//
// # Inboxes
//
// agent://TARGET/.inbox/WRITER/NAME is an inbox: what WRITER delivers to
// TARGET (projection views, capsules). InboxAddress builds one, ParseInbox
// recognises one and names its parties, and Inbox.MayRead and
// Inbox.MayWrite are its access rule, decided from the address alone: only
// the writer writes, the target and the writer read, and no grant changes
// that (the node's authorizer asks the rule before the acl policy).
//
// A Resolver maps session keys (supplied by the agent runtime, e.g. MCP
// session ids or "agent:alice:main") to principals with ordered rules; the
// first rule that matches wins and no match gives the fallback principal.
// Modes: "map" (exact key), "prefix" (key prefix) and "regex" (RE2, unanchored
// unless the pattern anchors itself; the principal may use $1 or ${name} from
// the match). Decisions a caller should know:
//
//   - Session keys longer than MaxSessionKeyLen (512) bytes, and the empty key,
//     resolve to the fallback without consulting any rule: truncating instead
//     could make a long hostile key equal to a configured one.
//   - Static principals (map, prefix, and regex without $ references) must be
//     valid agent names when the Resolver is built; nothing is sanitised
//     silently. An expanded regex principal is passed through SanitizeName;
//     if nothing usable remains the rule counts as not matching and the next
//     rule is tried.
//   - The scheme comes from the rule, never from the session key: a template
//     may start with "agent://", and whatever a capture group holds (even
//     "team://x") only ever becomes part of an agent name.
//   - A session key is a label, not a credential: resolution decides whose
//     namespace is the default, while package acl decides what is allowed.
//
// Addresses and Resolvers are immutable values; a Resolver is safe for
// concurrent use.
package namespace

package namespace

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on addresses. See the package documentation.
const (
	MaxAddressLen   = 256 // bytes, of the trimmed input and of the canonical form
	MaxNameLen      = 64  // bytes
	MaxPathSegments = 16
)

// ErrInvalid is wrapped by every error about a malformed address or principal.
var ErrInvalid = errors.New("namespace: invalid address")

// Kind is the scheme of an address.
type Kind uint8

// The kinds of namespace.
const (
	KindAgent Kind = iota + 1
	KindTeam
	KindProject
)

// String returns the scheme without "://": "agent", "team" or "project".
func (k Kind) String() string {
	switch k {
	case KindAgent:
		return "agent"
	case KindTeam:
		return "team"
	case KindProject:
		return "project"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func parseKind(scheme string) (Kind, bool) {
	switch scheme {
	case "agent":
		return KindAgent, true
	case "team":
		return KindTeam, true
	case "project":
		return KindProject, true
	}
	return 0, false
}

// Address is a normalised namespace address. The zero value is invalid.
// Build addresses with Parse, Agent, Child or Resolve: a hand-built Address
// is not checked until it is marshalled or extended.
type Address struct {
	Kind Kind
	Name string
	Path string // segments joined by "/", no leading or trailing slash; "" is the root
}

// invalid builds the error for input s (quoted, shortened if long).
func invalid(s, format string, args ...any) error {
	const show = 80
	if len(s) > show {
		s = s[:show] + "..."
	}
	return fmt.Errorf("%w %q: %s", ErrInvalid, s, fmt.Sprintf(format, args...))
}

// Parse parses a full address such as "agent://bob/subagent/task-123",
// normalising it as the package documentation describes. Errors wrap ErrInvalid.
func Parse(s string) (Address, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Address{}, invalid(s, "empty")
	}
	if len(t) > MaxAddressLen {
		return Address{}, invalid(s, "longer than %d bytes", MaxAddressLen)
	}
	t = lowerASCII(t)
	scheme, rest, ok := strings.Cut(t, "://")
	if !ok {
		return Address{}, invalid(s, "missing scheme (want agent://, team:// or project://)")
	}
	kind, ok := parseKind(scheme)
	if !ok {
		return Address{}, invalid(s, "unknown scheme %q (want agent, team or project)", scheme)
	}
	if rest == "" {
		return Address{}, invalid(s, "missing name")
	}
	name, path, _ := strings.Cut(rest, "/")
	if name == "" {
		return Address{}, invalid(s, "empty name (nothing between \"://\" and \"/\")")
	}
	return build(s, kind, name, splitPath(path))
}

// MustParse is Parse for constants and tests; it panics on error.
func MustParse(s string) Address {
	a, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// Agent returns agent://name. The name is trimmed and lowercased, then validated.
func Agent(name string) (Address, error) {
	t := lowerASCII(strings.TrimSpace(name))
	return build(name, KindAgent, t, nil)
}

// ParsePrincipal accepts "agent://bob" or a bare "bob" and returns the agent
// root. Anything else (another kind, a path, an invalid name) is an error
// wrapping ErrInvalid.
func ParsePrincipal(s string) (Address, error) {
	if !strings.Contains(s, "://") {
		return Agent(s)
	}
	a, err := Parse(s)
	if err != nil {
		return Address{}, err
	}
	if a.Kind != KindAgent {
		return Address{}, invalid(s, "a principal must be an agent, not a %s", a.Kind)
	}
	if a.Path != "" {
		return Address{}, invalid(s, "a principal is an agent root and has no path")
	}
	return a, nil
}

// Resolve interprets the namespace argument arg of a caller whose agent is
// self, which must be an agent root:
//
//	""                  -> self
//	"team://x" (has "://") -> Parse(arg)
//	"subagent/task-123" -> agent://NAME/subagent/task-123 (a leading "/" is tolerated)
//
// Resolve says nothing about permission; that is package acl's business.
func Resolve(self Address, arg string) (Address, error) {
	if self.Kind != KindAgent || self.Path != "" || validName(self.Name) != "" {
		return Address{}, invalid(self.String(), "resolve: caller is not an agent root")
	}
	t := strings.TrimSpace(arg)
	if strings.Contains(t, "://") {
		return Parse(t)
	}
	segs := splitPath(lowerASCII(t))
	if len(segs) == 0 {
		return self, nil
	}
	return build(self.String()+"/"+t, self.Kind, self.Name, segs)
}

// String returns the canonical form, "agent://bob" or
// "agent://bob/subagent/task-123"; "" for the zero Address.
func (a Address) String() string {
	if a.IsZero() {
		return ""
	}
	s := a.Kind.String() + "://" + a.Name
	if a.Path != "" {
		s += "/" + a.Path
	}
	return s
}

// IsZero reports whether a is the zero (invalid) Address.
func (a Address) IsZero() bool { return a == Address{} }

// Root returns the address with the same kind and name and no path.
func (a Address) Root() Address { return Address{Kind: a.Kind, Name: a.Name} }

// Parent returns the address one segment up; ok is false at the root.
func (a Address) Parent() (parent Address, ok bool) {
	if a.Path == "" {
		return Address{}, false
	}
	i := strings.LastIndexByte(a.Path, '/')
	if i < 0 {
		return a.Root(), true
	}
	return Address{Kind: a.Kind, Name: a.Name, Path: a.Path[:i]}, true
}

// Contains reports whether b is a or lies under it: same kind and name, and
// a's path is a prefix of b's on a segment boundary (agent://bob/a contains
// agent://bob/a/b but not agent://bob/ab). The zero Address contains nothing.
func (a Address) Contains(b Address) bool {
	if a.IsZero() || a.Kind != b.Kind || a.Name != b.Name {
		return false
	}
	if a.Path == "" || a.Path == b.Path {
		return true
	}
	return strings.HasPrefix(b.Path, a.Path) && len(b.Path) > len(a.Path) && b.Path[len(a.Path)] == '/'
}

// Child returns a extended by the relative path rel ("x" or "x/y"), normalised
// and validated as by Parse. An empty rel, or one holding "://", is an error.
func (a Address) Child(rel string) (Address, error) {
	shown := a.String() + " + " + rel
	t := strings.TrimSpace(rel)
	if strings.Contains(t, "://") {
		return Address{}, invalid(shown, "child path is a full address")
	}
	add := splitPath(lowerASCII(t))
	if len(add) == 0 {
		return Address{}, invalid(shown, "empty child path")
	}
	return build(shown, a.Kind, a.Name, append(splitPath(a.Path), add...))
}

// Owner reports the principal that owns a by default: the agent root for an
// agent address (ok=true); team and project addresses have no default owner.
func (a Address) Owner() (owner Address, ok bool) {
	if a.Kind != KindAgent || a.Name == "" {
		return Address{}, false
	}
	return a.Root(), true
}

// MarshalText encodes a as its canonical string ("" for the zero Address).
// It fails for a hand-built Address that is not in canonical form.
func (a Address) MarshalText() ([]byte, error) {
	if a.IsZero() {
		return []byte{}, nil
	}
	s := a.String()
	if b, err := Parse(s); err != nil {
		return nil, err
	} else if b != a {
		return nil, invalid(s, "not in canonical form")
	}
	return []byte(s), nil
}

// UnmarshalText parses text with Parse; empty text gives the zero Address.
func (a *Address) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*a = Address{}
		return nil
	}
	b, err := Parse(string(text))
	if err != nil {
		return err
	}
	*a = b
	return nil
}

// build validates the parts of an address (already trimmed and lowercased)
// and assembles it; shown is the input quoted in errors.
func build(shown string, kind Kind, name string, segs []string) (Address, error) {
	if _, ok := parseKind(kind.String()); !ok {
		return Address{}, invalid(shown, "unknown kind %d", uint8(kind))
	}
	if msg := validName(name); msg != "" {
		return Address{}, invalid(shown, "%s", msg)
	}
	if len(segs) > MaxPathSegments {
		return Address{}, invalid(shown, "%d path segments, more than %d", len(segs), MaxPathSegments)
	}
	for _, seg := range segs {
		if msg := validSegment(seg); msg != "" {
			return Address{}, invalid(shown, "path segment %q: %s", seg, msg)
		}
	}
	a := Address{Kind: kind, Name: name, Path: strings.Join(segs, "/")}
	if n := len(a.String()); n > MaxAddressLen {
		return Address{}, invalid(shown, "%d bytes, longer than %d", n, MaxAddressLen)
	}
	return a, nil
}

// validName returns what is wrong with name, or "".
func validName(name string) string {
	if name == "" {
		return "missing name"
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("name is %d bytes, longer than %d", len(name), MaxNameLen)
	}
	if msg := validSegment(name); msg != "" {
		return "name " + msg
	}
	return ""
}

// validSegment returns what is wrong with a name or path segment, or "".
func validSegment(seg string) string {
	if seg == "" {
		return "is empty"
	}
	dots := true
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !safeByte(c) {
			r, _ := utf8.DecodeRuneInString(seg[i:])
			return fmt.Sprintf("has invalid character %q (allowed: a-z 0-9 . _ -)", r)
		}
		dots = dots && c == '.'
	}
	if dots {
		return "is only dots"
	}
	return ""
}

func safeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// splitPath splits p on "/" and drops empty segments, which collapses
// repeated slashes and ignores leading and trailing ones.
func splitPath(p string) []string {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
}

// lowerASCII lowercases ASCII letters only; see the package documentation.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// SanitizeName makes a safe agent name from arbitrary text ("Alice@My Host"
// becomes "alice-my-host"): ASCII letters are lowercased, every run of other
// characters outside [a-z0-9._] (hyphens included) becomes one '-', hyphens
// are trimmed from both ends and the result is cut to MaxNameLen bytes. It
// returns "" when nothing usable remains. A non-empty result is always a
// valid name for Agent, and SanitizeName is idempotent.
func SanitizeName(s string) string {
	b := make([]byte, 0, MaxNameLen)
	dash := false
	for i := 0; i < len(s) && len(b) < MaxNameLen; i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c == '-' || !safeByte(c) {
			dash = true
			continue
		}
		if dash && len(b) > 0 {
			b = append(b, '-')
		}
		dash = false
		if len(b) < MaxNameLen {
			b = append(b, c)
		}
	}
	name := strings.TrimRight(string(b), "-")
	if strings.Trim(name, ".") == "" {
		return ""
	}
	return name
}

package acl

import (
	"fmt"
	"slices"
	"strings"
)

// Permission is one thing a principal may do to a namespace.
type Permission uint8

// The permissions, in their canonical order.
const (
	Read  Permission = iota + 1 // read memories
	Write                       // add, edit and retract memories
	Share                       // copy or project memories out of the namespace
	Admin                       // grant and revoke; implies every other permission
)

// AllPermissions lists every permission in canonical order.
func AllPermissions() []Permission { return []Permission{Read, Write, Share, Admin} }

// Member is what a "member" grant holds: read and write.
func Member() []Permission { return []Permission{Read, Write} }

func (p Permission) valid() bool { return p >= Read && p <= Admin }

// String returns "read", "write", "share" or "admin".
func (p Permission) String() string {
	switch p {
	case Read:
		return "read"
	case Write:
		return "write"
	case Share:
		return "share"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("Permission(%d)", uint8(p))
}

// ParsePermission parses one permission name, case-insensitively and ignoring
// surrounding white space. The error wraps ErrUnknownPermission and names s.
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "share":
		return Share, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("%w %q (want read, write, share or admin)", ErrUnknownPermission, shorten(s))
}

// ParsePermissions parses a comma-separated list such as "read,write", where
// "member" stands for read and write and "all" for every permission. The
// result is sorted and has no duplicates; an empty list is an error.
func ParsePermissions(s string) ([]Permission, error) {
	var out []Permission
	for part := range strings.SplitSeq(s, ",") {
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "member":
			out = append(out, Member()...)
		case "all":
			out = append(out, AllPermissions()...)
		default:
			p, err := ParsePermission(part)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return normPerms(out), nil
}

// FormatPermissions joins perms with commas: "read,write".
func FormatPermissions(perms []Permission) string {
	s := make([]string, len(perms))
	for i, p := range perms {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// normPerms returns perms sorted without duplicates, in a new slice.
func normPerms(perms []Permission) []Permission {
	out := slices.Clone(perms)
	slices.Sort(out)
	return slices.Compact(out)
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

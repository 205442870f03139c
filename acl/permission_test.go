package acl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParsePermission(t *testing.T) {
	for _, p := range AllPermissions() {
		got, err := ParsePermission(" " + strings.ToUpper(p.String()) + " ")
		if err != nil || got != p {
			t.Errorf("ParsePermission(%q) = %v, %v", p.String(), got, err)
		}
	}
	_, err := ParsePermission("delete")
	if !errors.Is(err, ErrUnknownPermission) || !strings.Contains(err.Error(), `"delete"`) {
		t.Errorf("ParsePermission(delete) error = %v; want ErrUnknownPermission naming it", err)
	}
}

func TestParsePermissions(t *testing.T) {
	for in, want := range map[string][]Permission{
		"member":            {Read, Write},
		"write, read,write": {Read, Write},
		"all":               {Read, Write, Share, Admin},
		"share,member":      {Read, Write, Share},
	} {
		got, err := ParsePermissions(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParsePermissions(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "read,", "read,own"} {
		if _, err := ParsePermissions(in); !errors.Is(err, ErrUnknownPermission) {
			t.Errorf("ParsePermissions(%q) error = %v; want ErrUnknownPermission", in, err)
		}
	}
}

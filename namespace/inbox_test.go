package namespace

import (
	"errors"
	"testing"
)

func TestInboxAddress(t *testing.T) {
	alice, bob := MustParse("agent://alice"), MustParse("agent://bob")
	for _, c := range []struct {
		target, writer Address
		name, want     string
	}{
		{bob, alice, "proj-1", "agent://bob/.inbox/alice/proj-1"},
		{bob, alice, "Capsule-X/items", "agent://bob/.inbox/alice/capsule-x/items"},
		{alice, alice, "self", "agent://alice/.inbox/alice/self"},
	} {
		got, err := InboxAddress(c.target, c.writer, c.name)
		if err != nil || got.String() != c.want {
			t.Errorf("InboxAddress(%s, %s, %q) = %v, %v; want %s", c.target, c.writer, c.name, got, err, c.want)
		}
		if in, ok := ParseInbox(got); !ok || in.Target != c.target || in.Writer != c.writer {
			t.Errorf("ParseInbox(%s) = %+v, %v", got, in, ok)
		}
	}
	for _, c := range []struct {
		target, writer Address
		name           string
	}{
		{MustParse("team://x"), alice, "n"},        // target not an agent
		{bob, MustParse("project://p"), "n"},       // writer not an agent
		{MustParse("agent://bob/sub"), alice, "n"}, // target has a path
		{bob, MustParse("agent://alice/sub"), "n"}, // writer has a path
		{Address{}, alice, "n"},                    // zero target
		{bob, alice, ""},                           // empty name
		{bob, alice, "a/../b"},                     // invalid segment
		{bob, alice, "team://x"},                   // a full address
	} {
		if got, err := InboxAddress(c.target, c.writer, c.name); !errors.Is(err, ErrInvalid) || !got.IsZero() {
			t.Errorf("InboxAddress(%s, %s, %q) = %v, %v; want an ErrInvalid", c.target, c.writer, c.name, got, err)
		}
	}
}

func TestParseInbox(t *testing.T) {
	for _, c := range []struct {
		ns             string
		ok             bool
		target, writer string
	}{
		{"agent://bob/.inbox/alice/proj-1", true, "agent://bob", "agent://alice"},
		{"agent://bob/.inbox/alice/a/b/c", true, "agent://bob", "agent://alice"},
		{"agent://bob/.inbox/alice", false, "", ""}, // no name
		{"agent://bob/.inbox", false, "", ""},
		{"agent://bob/notes", false, "", ""},
		{"agent://bob/notes/.inbox/alice/x", false, "", ""}, // .inbox must come first
		{"agent://bob/inbox/alice/x", false, "", ""},
		{"team://bob/.inbox/alice/x", false, "", ""}, // only agents have inboxes
		{"project://p/.inbox/alice/x", false, "", ""},
		{"agent://bob", false, "", ""},
	} {
		in, ok := ParseInbox(MustParse(c.ns))
		if ok != c.ok {
			t.Errorf("ParseInbox(%s): ok=%v, want %v", c.ns, ok, c.ok)
			continue
		}
		if ok && (in.Target.String() != c.target || in.Writer.String() != c.writer) {
			t.Errorf("ParseInbox(%s) = %+v, want %s %s", c.ns, in, c.target, c.writer)
		}
		if !ok && in != (Inbox{}) {
			t.Errorf("ParseInbox(%s) = %+v with ok=false", c.ns, in)
		}
	}
}

// TestInboxRule is the access table: only the writer writes, the target
// and the writer read, nobody else does either.
func TestInboxRule(t *testing.T) {
	in, ok := ParseInbox(MustParse("agent://bob/.inbox/alice/proj-1"))
	if !ok {
		t.Fatal("not an inbox")
	}
	for _, c := range []struct {
		p           string
		read, write bool
	}{
		{"agent://alice", true, true},   // the writer
		{"agent://bob", true, false},    // the target
		{"agent://carol", false, false}, // anyone else
		{"agent://alice/sub", false, false},
		{"team://alice", false, false},
	} {
		p := MustParse(c.p)
		if got := in.MayRead(p); got != c.read {
			t.Errorf("%s MayRead = %v, want %v", c.p, got, c.read)
		}
		if got := in.MayWrite(p); got != c.write {
			t.Errorf("%s MayWrite = %v, want %v", c.p, got, c.write)
		}
	}
}

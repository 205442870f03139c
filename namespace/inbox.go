package namespace

import (
	"fmt"
	"strings"
)

// InboxSegment is the first path segment of every inbox namespace.
const InboxSegment = ".inbox"

// Inbox is the pair of agents an inbox namespace connects.
//
// An inbox carries what one agent delivers to another (projections,
// capsules). Its address names both parties:
// agent://TARGET/.inbox/WRITER/NAME. The rule, the same on every node:
// only WRITER writes there; TARGET and WRITER read it; nobody else reads
// or writes it, and nobody holds any other permission on it (no share, no
// admin), so what was delivered cannot be delivered onward. The rule
// overrides grants: it is decided from the address alone.
type Inbox struct {
	Target Address // the agent the inbox belongs to (agent://TARGET)
	Writer Address // the only agent that writes it (agent://WRITER)
}

// InboxAddress returns agent://TARGET/.inbox/WRITER/NAME. Target and
// writer must be agent principals (no path); name is a relative path of
// one or more segments. Errors wrap ErrInvalid.
func InboxAddress(target, writer Address, name string) (Address, error) {
	if !isPrincipal(target) || !isPrincipal(writer) {
		return Address{}, fmt.Errorf("%w: inbox parties must be agent principals, got %q and %q", ErrInvalid, target, writer)
	}
	if strings.TrimSpace(name) == "" {
		// target.Child would give agent://TARGET/.inbox/WRITER, which
		// ParseInbox does not take for an inbox: the rule would not apply.
		return Address{}, fmt.Errorf("%w: inbox name is empty", ErrInvalid)
	}
	ns, err := target.Child(InboxSegment + "/" + writer.Name + "/" + name)
	if err != nil {
		return Address{}, fmt.Errorf("inbox name %q: %w", name, err)
	}
	return ns, nil
}

func isPrincipal(a Address) bool { return a.Kind == KindAgent && a.Name != "" && a.Path == "" }

// ParseInbox reports the parties of ns when it is an inbox namespace
// (an agent address whose path is .inbox/WRITER/NAME..., WRITER a valid
// agent name); ok is false for every other address.
func ParseInbox(ns Address) (in Inbox, ok bool) {
	if ns.Kind != KindAgent {
		return Inbox{}, false
	}
	parts := strings.Split(ns.Path, "/")
	if len(parts) < 3 || parts[0] != InboxSegment {
		return Inbox{}, false
	}
	w, err := Agent(parts[1])
	if err != nil {
		return Inbox{}, false
	}
	return Inbox{Target: ns.Root(), Writer: w}, true
}

// MayRead reports whether principal p may read the inbox: its target and
// its writer may.
func (in Inbox) MayRead(p Address) bool { return p == in.Target || p == in.Writer }

// MayWrite reports whether principal p may write the inbox: only its
// writer may.
func (in Inbox) MayWrite(p Address) bool { return p == in.Writer }

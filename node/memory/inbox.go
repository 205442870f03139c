package memory

import (
	"fmt"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
)

// Inbox namespaces carry what one agent delivers to another: projections
// (a live or snapshot view of a namespace) and capsules. The address says
// both parties: agent://TARGET/.inbox/WRITER/NAME. Only WRITER writes there
// (on its own node; the content replicates to the node hosting TARGET);
// TARGET and WRITER read it; nobody shares, administers or re-delivers it.
// Because the inbox lies under the target's agent namespace, the target's
// searches of its own namespace include what was delivered, and the
// namespace names the source.
//
// What arrives in an inbox is the writer's word, not the target's: every
// read marks it (Memory.From = the writer), and the context bundle shows
// it in a section of its own, never among the target's decisions (see
// the package doc, "Other agents' words").
//
// The rule itself lives in package namespace (Inbox); this file adapts it
// to the Service's errors and permissions.

// InboxNamespace returns agent://TARGET/.inbox/WRITER/NAME.
func InboxNamespace(target, writer namespace.Address, name string) (namespace.Address, error) {
	ns, err := namespace.InboxAddress(target, writer, name)
	if err != nil {
		return ns, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return ns, nil
}

// InboxParties reports the target and writer of an inbox namespace
// (namespace.ParseInbox; node/cluster asks it which inboxes to hold).
func InboxParties(ns namespace.Address) (target, writer namespace.Address, ok bool) {
	in, ok := namespace.ParseInbox(ns)
	return in.Target, in.Writer, ok
}

// inboxWriter is the writer of inbox namespace ns ("agent://WRITER"), or
// "" when ns is not an inbox. It runs on every memory read, so the cheap
// test comes first.
func inboxWriter(ns string) string {
	if !strings.Contains(ns, "/"+namespace.InboxSegment+"/") {
		return ""
	}
	a, err := namespace.Parse(ns)
	if err != nil {
		return ""
	}
	if _, w, ok := InboxParties(a); ok {
		return w.String()
	}
	return ""
}

// isInboxNS reports whether ns is an inbox namespace.
func isInboxNS(ns string) bool { return inboxWriter(ns) != "" }

// inboxDecision applies the inbox rule: ok is false when ns is not an
// inbox (the acl policy decides then).
func inboxDecision(p, ns namespace.Address, perm acl.Permission) (err error, ok bool) {
	in, isInbox := namespace.ParseInbox(ns)
	if !isInbox {
		return nil, false
	}
	switch {
	case perm == acl.Write && in.MayWrite(p):
		return nil, true
	case perm == acl.Read && in.MayRead(p):
		return nil, true
	}
	return fmt.Errorf("%w: %s lacks %s on %s (an inbox: only %s writes, %s and %s read)",
		acl.ErrDenied, p, perm, ns, in.Writer, in.Target, in.Writer), true
}

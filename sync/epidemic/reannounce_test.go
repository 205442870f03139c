package epidemic

import (
	"slices"
	"testing"
	"time"
)

// Reannounce announces to an active peer the ids given that it neither
// sent nor broadcast and that were received here, and only those; a peer
// outside the active view is announced nothing.
func TestReannounce(t *testing.T) {
	n, now := linkedNode(t, "b", "c")
	fromB, byB, fromC, unknown := MsgID{1}, MsgID{2}, MsgID{3}, MsgID{4}
	step := func(from PeerID, id MsgID, origin PeerID) {
		t.Helper()
		if err := n.Step(from, Message{Kind: KindGossip, ID: id, Origin: origin, Payload: []byte("p"), Round: 1}); err != nil {
			t.Fatal(err)
		}
	}
	step("b", fromB, "d")
	step("c", byB, "b")
	step("c", fromC, "d")
	for n.HasReady() {
		n.Ready()
	}
	got := n.Reannounce("b", fromB, byB, fromC, unknown)
	if want := []MsgID{fromC}; !slices.Equal(got, want) {
		t.Fatalf("Reannounce(b) = %x; want only %x (not what b sent or broadcast, nor what never came)", got, want)
	}
	if got := n.Reannounce("z", fromC); got != nil {
		t.Fatalf("Reannounce to a peer outside the active view = %x", got)
	}
	n.Tick(now.Add(time.Second))
	var sent []MsgID
	for n.HasReady() {
		for _, env := range n.Ready().Messages {
			if env.To == "b" && env.Msg.Kind == KindIHave {
				for _, a := range env.Msg.IHave {
					sent = append(sent, a.ID)
				}
			}
		}
	}
	if !slices.Contains(sent, fromC) {
		t.Fatalf("b was announced %x; want %x among them", sent, fromC)
	}
}

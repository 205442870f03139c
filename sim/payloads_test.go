package sim

import (
	"encoding/binary"
	"testing"

	"github.com/mnemohq/mnemo/sync/wire"
)

// TestPayloadTable: one copy per id while the id is among the latest
// payloadTableMax, read-only to an append, and the table bounded.
func TestPayloadTable(t *testing.T) {
	tab := newPayloadTable()
	payload := func(i int) ([wire.TreeIDSize]byte, []byte) {
		b := binary.BigEndian.AppendUint64(make([]byte, 0, 64), uint64(i))
		return wire.RelayID(b), b
	}
	id, first := payload(0)
	kept := tab.Intern(id, first)
	_, again := payload(0)
	if got := tab.Intern(id, again); &got[0] != &kept[0] {
		t.Fatal("a payload interned twice: two copies")
	}
	if grown := append(kept, 1); &grown[0] == &kept[0] {
		t.Fatal("an append wrote into the kept payload")
	}
	for i := 1; i <= payloadTableMax; i++ {
		tab.Intern(payload(i))
	}
	if len(tab.m) != payloadTableMax || len(tab.ring) != payloadTableMax {
		t.Fatalf("table holds %d ids (ring %d), want %d", len(tab.m), len(tab.ring), payloadTableMax)
	}
	if got := tab.Intern(id, again); &got[0] != &again[0] {
		t.Fatal("the oldest payload still kept past payloadTableMax newer ones")
	}
}

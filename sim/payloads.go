package sim

import (
	"sync"

	"github.com/mnemohq/mnemo/sync/replica"
	"github.com/mnemohq/mnemo/sync/wire"
)

// payloadTable is the simulation's one copy of each relayed delta's bytes
// (replica.Config.Payloads): every holder of a namespace keeps each
// payload of its tree for epidemic.Config.PayloadTTL to answer grafts,
// the very same immutable bytes (their id is half their SHA-256, wire.RelayID), so 100 nodes
// held 100 copies (at 100 nodes × 10k ops, 133 MB of a live heap of
// 908 MB at the end). It keeps the latest payloadTableMax ids, first in
// first out; an older payload arriving again is kept anew. Its bytes are
// handed out with their capacity cut to their length, so an append by
// any holder copies. Safe for concurrent use (the nodes of a window run
// at once): which holder interns a payload first changes only which equal
// copy is kept.
type payloadTable struct {
	mu   sync.Mutex
	m    map[[wire.TreeIDSize]byte][]byte
	ring [][wire.TreeIDSize]byte // the ids kept, oldest at next once full
	next int
}

// payloadTableMax is well above the payloads a PayloadTTL (30 s) brings at
// the rates simulated (7k broadcasts in 100 s at 100 × 10k), and bounds
// what the table alone keeps alive to that many payloads.
const payloadTableMax = 1 << 14

func newPayloadTable() *payloadTable {
	return &payloadTable{m: make(map[[wire.TreeIDSize]byte][]byte)}
}

var _ replica.PayloadTable = (*payloadTable)(nil)

func (t *payloadTable) Intern(id [wire.TreeIDSize]byte, payload []byte) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.m[id]; ok {
		return b
	}
	payload = payload[:len(payload):len(payload)]
	if len(t.ring) < payloadTableMax {
		t.ring = append(t.ring, id)
	} else {
		delete(t.m, t.ring[t.next])
		t.ring[t.next] = id
		t.next = (t.next + 1) % payloadTableMax
	}
	t.m[id] = payload
	return payload
}

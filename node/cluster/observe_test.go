package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/node/memory"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	applied []appliedObs
	synced  []syncedObs
	bytes   map[bool]map[string]int // sent? → kind → bytes
}

type appliedObs struct {
	live bool
	lag  time.Duration
}

type syncedObs struct {
	took  time.Duration
	bytes int
}

func (r *recorder) DeltaApplied(live bool, lag time.Duration) {
	r.applied = append(r.applied, appliedObs{live, lag})
}
func (r *recorder) SyncAnswered(took time.Duration, bytes int) {
	r.synced = append(r.synced, syncedObs{took, bytes})
}
func (r *recorder) Frame(sent bool, kind string, n int) {
	if r.bytes == nil {
		r.bytes = map[bool]map[string]int{true: {}, false: {}}
	}
	r.bytes[sent][kind] += n
}

// The loop reports, on its own clock: a live delta's lag from its write to
// its application; a sync it asked for, from request to the answer's end,
// with the state the answer brought; every frame's size both ways.
func TestObserverMeasures(t *testing.T) {
	net := newSteppedNet(t, 2, 3)
	n0, n1 := net.nodes[0], net.nodes[1]
	r0, r1 := &recorder{}, &recorder{}
	n0.st.cfg.Observer, n1.st.cfg.Observer = r0, r1
	net.join()
	ctx := context.Background()

	// written now, sent 250ms later
	if _, err := n0.svc.Save(ctx, n0.me, memory.SaveRequest{Namespace: "team://core", Content: "lag is measured"}); err != nil {
		t.Fatal(err)
	}
	net.clock.Step(250 * time.Millisecond)
	n0.st.Pump()
	net.run()
	if len(r1.applied) != 1 || !r1.applied[0].live || r1.applied[0].lag != 250*time.Millisecond {
		t.Fatalf("node 1 applied %+v, want one live delta 250ms after its write", r1.applied)
	}
	if len(r0.applied) != 0 {
		t.Fatalf("node 0 applied %+v of its own write", r0.applied)
	}
	for kind, sent := range r0.bytes[true] {
		if got := r1.bytes[false][kind]; got != sent {
			t.Errorf("%s: node 0 sent %d bytes, node 1 received %d", kind, sent, got)
		}
	}
	if r0.bytes[true]["deltas"] == 0 || r1.bytes[true]["ack"] == 0 {
		t.Errorf("frames: node 0 sent %v, node 1 sent %v", r0.bytes[true], r1.bytes[true])
	}

	// a write node 1 misses, then a sync node 1 asks for, answered 300ms later
	net.cut = func(from, to int) bool { return to == 1 }
	missed := net.save(n0, "team://core", "a note the cut loses")
	net.cut = nil
	r1.applied, r1.synced = nil, nil
	if err := n1.st.Sync(string(n0.id.NodeID())); err != nil {
		t.Fatal(err)
	}
	net.clock.Step(300 * time.Millisecond)
	net.run()
	if !n1.has(missed) {
		t.Fatal("the sync did not bring the missed write")
	}
	brought := 0
	for _, s := range r1.synced {
		if s.took != 300*time.Millisecond {
			t.Errorf("a sync took %v, want 300ms", s.took)
		}
		brought += s.bytes
	}
	if len(r1.synced) == 0 || brought == 0 {
		t.Fatalf("node 1's syncs: %+v", r1.synced)
	}
	if len(r1.applied) == 0 || r1.applied[0].live || r1.applied[0].lag != 300*time.Millisecond {
		t.Fatalf("node 1 applied %+v, want the sync answer's delta, 300ms after its write", r1.applied)
	}
	if len(n1.st.syncWatches) != 0 {
		t.Fatalf("%d syncs still watched after every answer came", len(n1.st.syncWatches))
	}
}

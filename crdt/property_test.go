package crdt

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	flagSeed      = flag.Uint64("seed", 0, "run the property tests with this one seed only")
	flagHistories = flag.Int("histories", 300, "random histories per property test")
)

// seeds returns the seeds of the random histories: the -seed flag alone, or
// a run of seeds derived from the time so every run explores new histories.
// A failure prints its seed; `go test -run NAME -seed N` replays it exactly.
func seeds(t *testing.T) []uint64 {
	if *flagSeed != 0 {
		return []uint64{*flagSeed}
	}
	n := *flagHistories
	if testing.Short() {
		n /= 5
	}
	base := uint64(time.Now().UnixNano())
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)*0x9e3779b97f4a7c15
	}
	return out
}

func forSeeds(t *testing.T, fn func(t *testing.T, rng *rand.Rand)) {
	t.Helper()
	for _, seed := range seeds(t) {
		rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
		ok := t.Run("", func(t *testing.T) { fn(t, rng) })
		if !ok {
			t.Fatalf("failed with -seed %d", seed)
		}
	}
}

// randomReplica returns a realistic 64-bit replica id (as from a hash).
func randomReplica(rng *rand.Rand) ReplicaID {
	for {
		if r := ReplicaID(rng.Uint64()); r != 0 {
			return r
		}
	}
}

// --- The naive reference: whole histories, no dots, no contexts. ---

type evKind int

const (
	evSet evKind = iota
	evAdd
	evRemove
	evRetract
)

// event is one operation as the reference sees it. covers lists the add
// events of the same element the issuer had seen when it removed or re-added.
type event struct {
	kind           evKind
	id, name, elem string
	value          string
	ts             Timestamp
	replica        ReplicaID
	covers         []int
}

type history struct {
	events []event
	deps   []bits // the issuer's seen set when the event was issued
}

// bits is a set of event indexes.
type bits []uint64

func (b *bits) set(i int) {
	for len(*b) <= i/64 {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b bits) has(i int) bool { return i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0 }

func (b bits) each(fn func(i int)) {
	for w, x := range b {
		for x != 0 {
			k := 0
			for x&(1<<k) == 0 {
				k++
			}
			fn(w*64 + k)
			x &^= 1 << k
		}
	}
}

// closed reports whether seen holds every event that any of its events
// depends on. Only then is a delta CRDT's view causally consistent; without
// causal delivery, replicas still converge once everything has arrived.
func (h *history) closed(seen bits) bool {
	ok := true
	seen.each(func(i int) {
		for w, x := range h.deps[i] {
			if w >= len(seen) && x != 0 || w < len(seen) && x&^seen[w] != 0 {
				ok = false
			}
		}
	})
	return ok
}

func (h *history) retracted(seen bits, id string) bool {
	found := false
	seen.each(func(i int) {
		if ev := h.events[i]; ev.kind == evRetract && ev.id == id {
			found = true
		}
	})
	return found
}

// issue appends an event by a replica whose seen set is seen, filling covers.
func (h *history) issue(ev event, seen *bits) int {
	if ev.kind == evAdd || ev.kind == evRemove {
		seen.each(func(i int) {
			o := h.events[i]
			if o.kind == evAdd && o.id == ev.id && o.name == ev.name && o.elem == ev.elem {
				ev.covers = append(ev.covers, i)
			}
		})
	}
	h.events = append(h.events, ev)
	h.deps = append(h.deps, slices.Clone(*seen))
	i := len(h.events) - 1
	seen.set(i)
	return i
}

// view is what a reader sees: retracted ids, field values, present elements,
// one line each, sorted.
func (h *history) view(seen bits) string {
	retracted := map[string]bool{}
	covered := map[int]bool{}
	seen.each(func(i int) {
		ev := h.events[i]
		if ev.kind == evRetract {
			retracted[ev.id] = true
		}
		for _, c := range ev.covers {
			covered[c] = true
		}
	})
	win := map[string]event{}
	var lines []string
	seen.each(func(i int) {
		ev := h.events[i]
		if retracted[ev.id] {
			return
		}
		switch ev.kind {
		case evSet:
			k := ev.id + " " + ev.name
			w, ok := win[k]
			if !ok || w.ts < ev.ts || (w.ts == ev.ts && w.replica < ev.replica) {
				win[k] = ev
			}
		case evAdd:
			if !covered[i] {
				lines = append(lines, fmt.Sprintf("%s %s[%s]", ev.id, ev.name, ev.elem))
			}
		}
	})
	for id := range retracted {
		lines = append(lines, id+" retracted")
	}
	for k, ev := range win {
		lines = append(lines, fmt.Sprintf("%s=%s", k, ev.value))
	}
	slices.Sort(lines)
	return strings.Join(slices.Compact(lines), "\n")
}

// mapView renders a Map the way history.view renders the reference.
func mapView(m *Map) string {
	var lines []string
	for _, id := range m.RetractedIDs() {
		lines = append(lines, id+" retracted")
	}
	for id, r := range m.records {
		for _, n := range r.FieldNames() {
			f, _ := r.Field(n)
			lines = append(lines, fmt.Sprintf("%s %s=%s", id, n, f.Value))
		}
		for set := range r.sets {
			if set == WitnessSet {
				continue // bookkeeping for digest sync, not user data
			}
			for _, e := range r.Elements(set) {
				lines = append(lines, fmt.Sprintf("%s %s[%s]", id, set, e))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// --- The Map simulation. ---

type mapDelta struct {
	m      *Map
	events []int
}

type mapReplica struct {
	id     ReplicaID
	clock  *Clock
	offset int64 // wall clock offset from the simulation's time, ms
	m      *Map
	seen   bits
	inbox  []int // indexes into sim.deltas; duplicates allowed
}

type mapSim struct {
	t        *testing.T
	rng      *rand.Rand
	now      int64 // simulation wall time, ms
	h        history
	reps     []*mapReplica
	deltas   []mapDelta
	lost     [][2]int // (replica, delta) dropped, redelivered later
	states   []*Map   // snapshots of states for the laws
	ids      []string
	fields   []string
	sets     []string
	elems    []string
	retracts int

	closedChecks int // reference comparisons made (causally closed states)
}

func newMapSim(t *testing.T, rng *rand.Rand) *mapSim {
	s := &mapSim{
		t: t, rng: rng, now: 1_763_700_000_000,
		ids:    []string{"m1", "m2", "m3", "m4"},
		fields: []string{"title", "body", "kind"},
		sets:   []string{"tags", "files"},
		elems:  []string{"a", "b", "c"},
	}
	n := 2 + rng.IntN(4)
	for range n {
		s.reps = append(s.reps, &mapReplica{
			id:     randomReplica(rng),
			clock:  NewClock(time.Minute),
			offset: rng.Int64N(3),
			m:      NewMap(),
		})
	}
	if rng.IntN(4) == 0 { // small ids make equal-timestamp tie-breaks readable
		for i, r := range s.reps {
			r.id = ReplicaID(i + 1)
		}
	}
	return s
}

func (s *mapSim) wall(r *mapReplica) time.Time { return time.UnixMilli(s.now + r.offset) }

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// mutate runs one random edit (one to three operations) on replica ri.
func (s *mapSim) mutate(ri int) {
	r := s.reps[ri]
	id := pick(s.rng, s.ids)
	if s.rng.IntN(25) == 0 && s.retracts < 2 {
		s.retracts++
		d := r.m.Retract(id)
		s.record(ri, d, []int{s.h.issue(event{kind: evRetract, id: id}, &r.seen)})
		return
	}
	e, err := r.m.Edit(r.id, id, DefaultLimits())
	refRetracted := s.h.retracted(r.seen, id)
	if refRetracted != (err != nil) {
		s.t.Fatalf("Edit(%s) = %v, reference retracted=%v", id, err, refRetracted)
	}
	if err != nil {
		if !errors.Is(err, ErrRetracted) {
			s.t.Fatalf("Edit(%s): %v", id, err)
		}
		return
	}
	ts := r.clock.Now(s.wall(r))
	var evs []int
	usedField := map[string]bool{}
	for range 1 + s.rng.IntN(3) {
		switch s.rng.IntN(3) {
		case 0:
			f := pick(s.rng, s.fields)
			if usedField[f] {
				continue
			}
			usedField[f] = true
			v := fmt.Sprintf("%s@%d", f, s.rng.IntN(1000))
			if err := e.Set(ts, f, []byte(v)); err != nil {
				s.t.Fatalf("Set %s.%s at %v: %v", id, f, ts, err)
			}
			evs = append(evs, s.h.issue(event{kind: evSet, id: id, name: f, value: v, ts: ts, replica: r.id}, &r.seen))
		case 1:
			set, el := pick(s.rng, s.sets), pick(s.rng, s.elems)
			if err := e.Add(set, el); err != nil {
				s.t.Fatal(err)
			}
			evs = append(evs, s.h.issue(event{kind: evAdd, id: id, name: set, elem: el}, &r.seen))
		case 2:
			set, el := pick(s.rng, s.sets), pick(s.rng, s.elems)
			e.Remove(set, el)
			evs = append(evs, s.h.issue(event{kind: evRemove, id: id, name: set, elem: el}, &r.seen))
		}
	}
	d := e.Delta()
	r.m.Join(d)
	s.record(ri, d, evs)
}

func (s *mapSim) record(ri int, d *Map, evs []int) {
	s.deltas = append(s.deltas, mapDelta{m: d, events: evs})
	di := len(s.deltas) - 1
	for j, o := range s.reps {
		if j != ri {
			o.inbox = append(o.inbox, di)
		}
	}
	s.check(s.reps[ri])
}

// deliver hands replica ri a random part of its inbox: single deltas or a
// delta group, in random order, some kept for a duplicate later, some lost.
func (s *mapSim) deliver(ri int) {
	r := s.reps[ri]
	if len(r.inbox) == 0 {
		return
	}
	var group []int
	for range 1 + s.rng.IntN(len(r.inbox)) {
		k := s.rng.IntN(len(r.inbox))
		di := r.inbox[k]
		switch x := s.rng.IntN(10); {
		case x == 0: // lost; anti-entropy redelivers it later
			s.lost = append(s.lost, [2]int{ri, di})
			r.inbox = slices.Delete(r.inbox, k, k+1)
			continue
		case x <= 2: // delivered now and again later
		default:
			r.inbox = slices.Delete(r.inbox, k, k+1)
		}
		group = append(group, di)
	}
	if len(group) > 1 && s.rng.IntN(3) == 0 {
		g := NewMap()
		var evs []int
		for _, di := range group {
			g.Join(s.deltas[di].m)
			evs = append(evs, s.deltas[di].events...)
		}
		s.apply(r, g, evs)
		return
	}
	for _, di := range group {
		s.apply(r, s.deltas[di].m, s.deltas[di].events)
	}
}

// apply does what a node does with a delta: decode it (sometimes), check and
// observe its largest timestamp, join it.
func (s *mapSim) apply(r *mapReplica, d *Map, evs []int) {
	if s.rng.IntN(3) == 0 {
		b := d.Encode()
		back, err := DecodeMap(b, Limits{})
		if err != nil {
			s.t.Fatalf("decode delta: %v", err)
		}
		if !bytes.Equal(back.Encode(), b) {
			s.t.Fatal("delta encoding does not round-trip")
		}
		d = back
	}
	if _, err := r.clock.Observe(d.MaxTimestamp(), s.wall(r)); err != nil {
		s.t.Fatalf("Observe: %v", err)
	}
	before := d.Digest()
	r.m.Join(d)
	if d.Digest() != before {
		s.t.Fatal("Join modified its argument")
	}
	for _, e := range evs {
		r.seen.set(e)
	}
	s.check(r)
}

func (s *mapSim) check(r *mapReplica) {
	s.t.Helper()
	if err := checkMap(r.m); err != nil {
		s.t.Fatalf("replica %v: %v", r.id, err)
	}
	// Retract is final whatever order deltas arrive in.
	for _, id := range s.ids {
		if s.h.retracted(r.seen, id) && (!r.m.Retracted(id) || r.m.Entry(id) != nil) {
			s.t.Fatalf("replica %v received the retract of %s but keeps it", r.id, id)
		}
	}
	if !s.h.closed(r.seen) {
		return
	}
	s.closedChecks++
	if got, want := mapView(r.m), s.h.view(r.seen); got != want {
		s.t.Fatalf("replica %v disagrees with the reference\n--- got\n%s\n--- want\n%s", r.id, got, want)
	}
}

func (s *mapSim) step() {
	switch x := s.rng.IntN(20); {
	case x < 9:
		s.mutate(s.rng.IntN(len(s.reps)))
	case x < 17:
		s.deliver(s.rng.IntN(len(s.reps)))
	case x < 18: // anti-entropy: what was lost is sent again
		for _, l := range s.lost {
			s.reps[l[0]].inbox = append(s.reps[l[0]].inbox, l[1])
		}
		s.lost = nil
	case x < 19: // a wall clock steps back
		s.reps[s.rng.IntN(len(s.reps))].offset -= s.rng.Int64N(50)
	default:
		if len(s.states) < 12 {
			s.states = append(s.states, s.reps[s.rng.IntN(len(s.reps))].m.Clone())
		}
	}
	s.now += s.rng.Int64N(3) // often the same millisecond: equal timestamps
}

// drain delivers everything outstanding, in random order with duplicates.
func (s *mapSim) drain() {
	for _, l := range s.lost {
		s.reps[l[0]].inbox = append(s.reps[l[0]].inbox, l[1])
	}
	s.lost = nil
	for i, r := range s.reps {
		for len(r.inbox) > 0 {
			s.deliver(i)
			for _, l := range s.lost {
				s.reps[l[0]].inbox = append(s.reps[l[0]].inbox, l[1])
			}
			s.lost = nil
		}
	}
}

func digestOf(m *Map) Digest { return m.Digest() }

func joined(ms ...*Map) *Map {
	out := NewMap()
	for _, m := range ms {
		out.Join(m)
	}
	return out
}

// checkLaws checks that join is commutative, associative and idempotent on
// a, b and c, and that a delta group applies like its members one by one.
func checkLaws(t *testing.T, what string, a, b, c *Map) {
	t.Helper()
	if joined(a, b).Digest() != joined(b, a).Digest() {
		t.Fatalf("%s: join not commutative", what)
	}
	if joined(joined(a, b), c).Digest() != joined(a, joined(b, c)).Digest() {
		t.Fatalf("%s: join not associative", what)
	}
	if joined(a, a).Digest() != a.Digest() {
		t.Fatalf("%s: join not idempotent", what)
	}
	self := a.Clone()
	self.Join(a)
	self.Join(self)
	if self.Digest() != a.Digest() {
		t.Fatalf("%s: a ⊔ a != a", what)
	}
	step := a.Clone()
	step.Join(b)
	step.Join(c)
	grouped := a.Clone()
	grouped.Join(joined(b, c))
	if step.Digest() != grouped.Digest() {
		t.Fatalf("%s: group of deltas applies differently from its members", what)
	}
}

func TestMapRandomHistories(t *testing.T) {
	var compared, events, histories int
	defer func() {
		t.Logf("%d histories, %d events, %d comparisons with the reference", histories, events, compared)
		if !t.Failed() && compared < histories {
			t.Errorf("the reference was compared only %d times", compared)
		}
	}()
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		s := newMapSim(t, rng)
		for range 60 + rng.IntN(100) {
			s.step()
		}
		s.drain()
		histories++
		events += len(s.h.events)
		compared += s.closedChecks

		// Delivery in any order with duplicates converges.
		want := s.reps[0].m.Digest()
		for _, r := range s.reps[1:] {
			if r.m.Digest() != want {
				t.Fatalf("replicas diverge:\n%v\n%s\n%v\n%s", s.reps[0].id, mapView(s.reps[0].m), r.id, mapView(r.m))
			}
		}
		var all bits
		for i := range s.h.events {
			all.set(i)
		}
		if got, ref := mapView(s.reps[0].m), s.h.view(all); got != ref {
			t.Fatalf("converged state disagrees with the reference\n--- got\n%s\n--- want\n%s", got, ref)
		}

		// Delta path equals full-state path: a replica joining every delta
		// once in a new random order, and one joining the replicas' full
		// states and the snapshots, reach the same state.
		byDelta := NewMap()
		for _, i := range rng.Perm(len(s.deltas)) {
			byDelta.Join(s.deltas[i].m)
		}
		byState := NewMap()
		for _, i := range rng.Perm(len(s.states)) {
			byState.Join(s.states[i])
		}
		for _, i := range rng.Perm(len(s.reps)) {
			byState.Join(s.reps[i].m)
		}
		if byDelta.Digest() != want || byState.Digest() != want {
			t.Fatalf("delta path %v, state path %v, replicas %v", byDelta.Digest(), byState.Digest(), want)
		}

		// The laws, on states (snapshots from different times and replicas)
		// and on deltas and delta groups.
		states := append(slices.Clone(s.states), s.reps[0].m, NewMap())
		for range 5 {
			checkLaws(t, "states", pick(rng, states), pick(rng, states), pick(rng, states))
		}
		if len(s.deltas) > 0 {
			for range 5 {
				d := func() *Map { return s.deltas[rng.IntN(len(s.deltas))].m }
				checkLaws(t, "deltas", d(), d(), d())
				checkLaws(t, "groups", joined(d(), d()), joined(d(), d(), d()), d())
				checkLaws(t, "state and deltas", pick(rng, states), d(), d())
			}
		}
	})
}

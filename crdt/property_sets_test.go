package crdt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func orsetView(s *ORSet) string {
	var lines []string
	for _, e := range s.Elements() {
		lines = append(lines, fmt.Sprintf("s set[%s]", e))
	}
	return strings.Join(lines, "\n")
}

func orsetJoined(ss ...*ORSet) *ORSet {
	out := NewORSet()
	for _, s := range ss {
		out.Join(s)
	}
	return out
}

func orsetLaws(t *testing.T, what string, a, b, c *ORSet) {
	t.Helper()
	enc := func(s *ORSet) string { return string(s.Encode()) }
	if enc(orsetJoined(a, b)) != enc(orsetJoined(b, a)) {
		t.Fatalf("%s: join not commutative", what)
	}
	if enc(orsetJoined(orsetJoined(a, b), c)) != enc(orsetJoined(a, orsetJoined(b, c))) {
		t.Fatalf("%s: join not associative", what)
	}
	self := a.Clone()
	self.Join(a)
	self.Join(self)
	if enc(self) != enc(a) {
		t.Fatalf("%s: join not idempotent", what)
	}
	step := a.Clone()
	step.Join(b)
	step.Join(c)
	grouped := a.Clone()
	grouped.Join(orsetJoined(b, c))
	if enc(step) != enc(grouped) {
		t.Fatalf("%s: delta group applies differently from its members", what)
	}
}

// TestORSetRandomHistories checks the OR-Set against the naive reference
// that keeps every add and remove: random adds and removes on 2–5 replicas,
// deltas delivered in random order, in groups, duplicated, lost and resent.
func TestORSetRandomHistories(t *testing.T) {
	compared := 0
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		type replica struct {
			id    ReplicaID
			s     *ORSet
			seen  bits
			inbox []int
		}
		type delta struct {
			s   *ORSet
			evs []int
		}
		var (
			h      history
			reps   []*replica
			deltas []delta
			snaps  []*ORSet
			elems  = []string{"a", "b", "c", "d"}
		)
		for range 2 + rng.IntN(4) {
			reps = append(reps, &replica{id: randomReplica(rng), s: NewORSet()})
		}
		check := func(r *replica) {
			t.Helper()
			if err := checkORSet(r.s); err != nil {
				t.Fatalf("replica %v: %v", r.id, err)
			}
			if !h.closed(r.seen) {
				return
			}
			compared++
			if got, want := orsetView(r.s), h.view(r.seen); got != want {
				t.Fatalf("replica %v disagrees with the reference\n--- got\n%s\n--- want\n%s", r.id, got, want)
			}
		}
		apply := func(r *replica, d *ORSet, evs []int) {
			if rng.IntN(3) == 0 {
				b := d.Encode()
				back, err := DecodeORSet(b, Limits{})
				if err != nil || !bytes.Equal(back.Encode(), b) {
					t.Fatalf("delta does not round-trip: %v", err)
				}
				d = back
			}
			before := string(d.Encode())
			r.s.Join(d)
			if string(d.Encode()) != before {
				t.Fatal("Join modified its argument")
			}
			for _, e := range evs {
				r.seen.set(e)
			}
			check(r)
		}
		for range 40 + rng.IntN(80) {
			ri := rng.IntN(len(reps))
			r := reps[ri]
			switch x := rng.IntN(10); {
			case x < 5:
				e := pick(rng, elems)
				viaJoin := r.s.Clone()
				var d *ORSet
				var ev int
				if rng.IntN(2) == 0 {
					var err error
					if d, err = r.s.Add(r.id, e); err != nil {
						t.Fatal(err)
					}
					ev = h.issue(event{kind: evAdd, id: "s", name: "set", elem: e}, &r.seen)
				} else {
					d = r.s.Remove(e)
					ev = h.issue(event{kind: evRemove, id: "s", name: "set", elem: e}, &r.seen)
				}
				if viaJoin.Join(d); string(viaJoin.Encode()) != string(r.s.Encode()) {
					t.Fatal("a local mutation differs from joining its delta")
				}
				deltas = append(deltas, delta{d, []int{ev}})
				for j, o := range reps {
					if j != ri {
						o.inbox = append(o.inbox, len(deltas)-1)
					}
				}
				check(r)
			case x < 9 && len(r.inbox) > 0:
				var group []int
				for range 1 + rng.IntN(len(r.inbox)) {
					k := rng.IntN(len(r.inbox))
					group = append(group, r.inbox[k])
					if rng.IntN(4) != 0 { // else: delivered again later
						r.inbox = slices.Delete(r.inbox, k, k+1)
					}
				}
				if rng.IntN(3) == 0 {
					g := NewORSet()
					var evs []int
					for _, di := range group {
						g.Join(deltas[di].s)
						evs = append(evs, deltas[di].evs...)
					}
					apply(r, g, evs)
				} else {
					for _, di := range group {
						apply(r, deltas[di].s, deltas[di].evs)
					}
				}
			default:
				snaps = append(snaps, r.s.Clone())
			}
		}
		for _, r := range reps {
			for _, i := range rng.Perm(len(deltas)) {
				apply(r, deltas[i].s, deltas[i].evs)
			}
		}
		want := string(reps[0].s.Encode())
		for _, r := range reps {
			if string(r.s.Encode()) != want {
				t.Fatalf("replicas diverge: %v vs %v", orsetView(reps[0].s), orsetView(r.s))
			}
		}
		byState := NewORSet()
		for _, s := range append(snaps, reps[0].s) {
			byState.Join(s)
		}
		if string(byState.Encode()) != want {
			t.Fatal("full-state path differs from delta path")
		}
		states := append(snaps, reps[0].s, NewORSet())
		d := func() *ORSet { return deltas[rng.IntN(len(deltas))].s }
		for range 4 {
			orsetLaws(t, "states", pick(rng, states), pick(rng, states), pick(rng, states))
			if len(deltas) > 0 {
				orsetLaws(t, "deltas", d(), d(), d())
				orsetLaws(t, "groups", orsetJoined(d(), d()), orsetJoined(d(), d(), d()), pick(rng, states))
			}
		}
	})
	if !t.Failed() && compared == 0 {
		t.Error("the reference was never compared")
	}
}

// TestGSetRandomHistories: any order, any duplicates, any grouping of adds
// gives the union.
func TestGSetRandomHistories(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		var deltas []*GSet
		want := map[string]bool{}
		src := NewGSet()
		for range 1 + rng.IntN(30) {
			e := fmt.Sprint(rng.IntN(20))
			want[e] = true
			deltas = append(deltas, src.Add(e))
		}
		var ref []string
		for e := range want {
			ref = append(ref, e)
		}
		slices.Sort(ref)
		for range 3 {
			s := NewGSet()
			for _, i := range rng.Perm(len(deltas)) {
				s.Join(deltas[i])
				if rng.IntN(3) == 0 {
					s.Join(deltas[rng.IntN(len(deltas))])
				}
			}
			if got := s.Elements(); !slices.Equal(got, ref) || !bytes.Equal(s.Encode(), src.Encode()) {
				t.Fatalf("got %v, want %v", got, ref)
			}
		}
		a, b, c := deltas[rng.IntN(len(deltas))], src.Clone(), NewGSet()
		join := func(xs ...*GSet) string {
			out := NewGSet()
			for _, x := range xs {
				out.Join(x)
			}
			return string(out.Encode())
		}
		if join(a, b) != join(b, a) || join(a, b, c) != join(c, b, a) || join(b, b) != join(b) {
			t.Fatal("GSet join is not commutative, associative and idempotent")
		}
	})
}

// TestLWWRandomWrites: the highest (TS, replica) wins whatever the order,
// and equal keys resolve by value the same way everywhere.
func TestLWWRandomWrites(t *testing.T) {
	forSeeds(t, func(t *testing.T, rng *rand.Rand) {
		reps := []ReplicaID{1, 2, randomReplica(rng)}
		var writes []LWW
		for range 1 + rng.IntN(12) {
			var l LWW
			writes = append(writes, l.Set(Timestamp(rng.IntN(4)), pick(rng, reps), []byte{byte('a' + rng.IntN(3))}))
		}
		best := writes[0]
		for _, w := range writes[1:] {
			if w.TS > best.TS || w.TS == best.TS && w.Replica > best.Replica ||
				w.TS == best.TS && w.Replica == best.Replica && bytes.Compare(w.Value, best.Value) > 0 {
				best = w
			}
		}
		for range 4 {
			var l LWW
			for _, i := range rng.Perm(len(writes)) {
				l.Join(writes[i])
				l.Join(writes[rng.IntN(len(writes))])
			}
			if l.TS != best.TS || l.Replica != best.Replica || !bytes.Equal(l.Value, best.Value) {
				t.Fatalf("got %+v, want %+v from %+v", l, best, writes)
			}
		}
	})
}

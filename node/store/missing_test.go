package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv"
)

// scanMissing is Store.Missing as it was before the dot index: two scans of
// the namespace, the entries starting with first sorted by their latest
// timestamp. It is the oracle of TestMissingMatchesScan.
func scanMissing(s *store.Store, ns string, have *crdt.Context, first string, fn func(id string, rec *crdt.Record) error) (*crdt.Context, error) {
	ctx := s.Context(ns)
	attached := map[crdt.Dot]struct{}{}
	type entry struct {
		id  string
		rec *crdt.Record
	}
	var firsts []entry
	visit := func(wantFirst bool) error {
		return s.Scan(ns, func(_, id string, rec *crdt.Record) error {
			if first != "" && strings.HasPrefix(id, first) != wantFirst {
				return nil
			}
			outside := false
			for _, d := range rec.Dots() {
				if !have.Contains(d) {
					attached[d] = struct{}{}
					outside = true
				}
			}
			switch {
			case outside && wantFirst:
				firsts = append(firsts, entry{id, rec})
			case outside:
				return fn(id, rec)
			}
			return nil
		})
	}
	if first != "" {
		if err := visit(true); err != nil {
			return nil, err
		}
		sort.SliceStable(firsts, func(i, j int) bool { return firsts[i].rec.MaxTimestamp() < firsts[j].rec.MaxTimestamp() })
		for _, e := range firsts {
			if err := fn(e.id, e.rec); err != nil {
				return nil, err
			}
		}
	}
	if err := visit(false); err != nil {
		return nil, err
	}
	return crdt.RemovedDots(ctx, have, attached), nil
}

func at(n int) crdt.Timestamp {
	return crdt.MakeTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()+int64(n), 0)
}

// missingKV is a KV under test that can be closed and reopened as a
// restarted process finds it, and read raw.
type missingKV struct {
	name   string
	open   func(t *testing.T) store.KV // the KV as committed so far
	closed func(kv store.KV)           // called after the Store closed kv
}

func missingKVs(t *testing.T) []missingKV {
	var mem *store.MemKV
	dir := t.TempDir()
	return []missingKV{
		{name: "MemKV", open: func(*testing.T) store.KV {
			if mem == nil {
				mem = store.NewMemKV()
			}
			return mem
		}, closed: func(kv store.KV) { mem = kv.(*store.MemKV).Restart() }},
		{name: "Badger", open: func(t *testing.T) store.KV {
			kv, err := badgerkv.Open(dir, badgerkv.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			return kv
		}, closed: func(store.KV) {}},
	}
}

// TestMissingMatchesScan: over seeded random histories — local edits that
// overwrite fields and remove set elements, retracts, a peer's edits and
// retracts from stale bases with some of its deltas lost (gaps in the
// context), deltas holding dots outside their context, reopens, and
// reopens of a store stripped of its index (the migration) — Missing
// answers exactly what the scanning implementation answered (same entries
// in the same order, same removed dots), through the index, through a
// scan and by its own choice, for requesters holding nothing, everything,
// an earlier context, random parts of the context, and dots never seen
// here; and the index holds exactly the dots the entries hold. Both over
// MemKV and over Badger.
func TestMissingMatchesScan(t *testing.T) {
	for seed := range uint64(8) {
		for _, k := range missingKVs(t) {
			if k.name == "Badger" && seed >= 3 {
				continue // a second each, mostly reopening
			}
			t.Run(fmt.Sprintf("%s/%d", k.name, seed), func(t *testing.T) {
				runMissingHistory(t, k, seed)
			})
		}
	}
}

func runMissingHistory(t *testing.T, k missingKV, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	kv := k.open(t)
	s, err := store.Open(kv, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	nss := []string{"team://a", "project://b"}
	ids := []string{"ab", "acl:1", "acl:2", "acl:3", "b", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "z"}
	fields := []string{"ti", "co", "im", "ua"}
	peers := map[string]*crdt.Map{} // the peer's view of each namespace
	strays := map[crdt.ReplicaID]*crdt.Map{}
	past := map[string][]*crdt.Context{}
	for _, ns := range nss {
		peers[ns] = crdt.NewMap()
	}
	for step := range 300 {
		ns, id := nss[rng.IntN(len(nss))], ids[rng.IntN(len(ids))]
		switch op := rng.IntN(20); {
		case op < 7: // local edit
			_, err = s.Update(7, func(tx *store.Tx) error {
				e, err := tx.Edit(ns, id)
				if errors.Is(err, crdt.ErrRetracted) {
					return nil
				}
				if err != nil {
					return err
				}
				for _, i := range rng.Perm(len(fields))[:1+rng.IntN(3)] {
					if err := e.Set(at(step), fields[i], []byte(fmt.Sprint("v", step))); err != nil {
						return err
					}
				}
				if rng.IntN(8) == 0 { // a run longer than an index key covers
					for i := range 2*store.IndexRunMax + rng.IntN(store.IndexRunMax) {
						if err := e.Set(at(step), fmt.Sprintf("f%02d", i), []byte("x")); err != nil {
							return err
						}
					}
				}
				tag := fmt.Sprint("t", rng.IntN(4))
				if rng.IntN(3) == 0 {
					e.Remove("tg", tag)
				} else if err := e.Add("tg", tag); err != nil {
					return err
				}
				tx.Commit(ns, id, e)
				return nil
			})
		case op < 8: // local retract
			_, err = s.Update(7, func(tx *store.Tx) error { return tx.Retract(ns, id) })
		case op < 16: // the peer edits, from what it has seen; some deltas are lost
			p := peers[ns]
			if rng.IntN(3) == 0 {
				st, err := s.State(ns)
				if err != nil {
					t.Fatal(err)
				}
				p.Join(st)
			}
			var d *crdt.Map
			switch rng.IntN(6) {
			case 0:
				d = p.Retract(id)
			case 1:
				d, err = p.Remove(9, id, "tg", fmt.Sprint("t", rng.IntN(4)))
			default:
				d, err = p.Set(9, at(step), id, fields[rng.IntN(len(fields))], []byte(fmt.Sprint("p", step)))
			}
			if errors.Is(err, crdt.ErrRetracted) {
				err = nil
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(4) != 0 {
				_, err = s.Apply(map[string]*crdt.Map{ns: d})
			}
		case op < 17: // a delta whose record holds a dot outside its context
			r := crdt.ReplicaID(11 + rng.IntN(2))
			if strays[r] == nil {
				strays[r] = crdt.NewMap()
			}
			d, err2 := strays[r].Set(r, at(step), id, "ti", []byte("stray"))
			if err2 != nil {
				t.Fatal(err2)
			}
			strays[r].Join(d)
			ctx := crdt.NewContext()
			switch rng.IntN(3) {
			case 0:
				ctx = s.Context(ns)
			case 1: // claims the stray dots so far, holding no record
				ctx = strays[r].Context().Clone()
				d = crdt.NewMap()
			}
			recs := map[string]*crdt.Record{}
			if rec := d.Entry(id); rec != nil {
				recs[id] = rec
			}
			_, err = s.Apply(map[string]*crdt.Map{ns: crdt.AssembleMap(ctx, recs, nil)})
		case op < 18: // restart, the index stripped half the time (an old store)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			k.closed(kv)
			if rng.IntN(2) == 0 {
				kv = k.open(t)
				stripIndex(t, kv, rng)
				if err := kv.Close(); err != nil {
					t.Fatal(err)
				}
				k.closed(kv)
			}
			kv = k.open(t)
			if s, err = store.Open(kv, store.Options{}); err != nil {
				t.Fatal(err)
			}
		default:
			past[ns] = append(past[ns], s.Context(ns))
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%10 == 9 {
			for _, ns := range nss {
				checkIndex(t, s, kv, ns)
				for _, have := range haves(rng, s.Context(ns), past[ns]) {
					for _, first := range []string{"", "acl:"} {
						checkMissing(t, s, ns, have, first)
					}
				}
			}
		}
	}
}

// stripIndex makes kv a store from before the dot index, as an
// interrupted migration left it: no format key, part of the index gone,
// and a key no entry justifies.
func stripIndex(t *testing.T, kv store.KV, rng *rand.Rand) {
	t.Helper()
	err := kv.Update(func(w store.Writer) error {
		var keys [][]byte
		if err := w.Iterate([]byte("d/"), func(k, _ []byte) error {
			if rng.IntN(2) == 0 {
				keys = append(keys, bytes.Clone(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range append(keys, []byte("s/format")) {
			if err := w.Delete(k); err != nil {
				return err
			}
		}
		return w.Set([]byte("d/team://a\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00m1"), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkIndex: the index keys of ns cover exactly the dots its entries
// hold, each once (a key covers a run of at most store.IndexRunMax
// counters of one replica, every one held by its entry), and every entry
// holding a dot outside the context is listed as such.
func checkIndex(t *testing.T, s *store.Store, kv store.KV, ns string) {
	t.Helper()
	ctx := s.Context(ns)
	held := map[string]map[crdt.Dot]int{} // id -> dot -> keys covering it
	outside := map[string]bool{}
	err := s.Scan(ns, func(_, id string, rec *crdt.Record) error {
		held[id] = map[crdt.Dot]int{}
		for _, d := range rec.Dots() {
			held[id][d] = 0
			if !ctx.Contains(d) {
				outside[id] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	err = kv.View(func(r store.Reader) error {
		p := []byte("d/" + ns + "\x00")
		if err := r.Iterate(p, func(k, _ []byte) error {
			k = k[len(p):]
			rep, first, n, id := crdt.ReplicaID(beUint(k[:8])), beUint(k[8:16]), uint64(k[16]), string(k[17:])
			if n >= store.IndexRunMax {
				t.Fatalf("%s: key of %s covers %d counters", ns, id, n+1)
			}
			for c := first; c <= first+n; c++ {
				d := crdt.Dot{Replica: rep, Counter: c}
				if _, ok := held[id][d]; !ok {
					t.Fatalf("%s: a key covers %v, which %s does not hold", ns, d, id)
				}
				held[id][d]++
			}
			return nil
		}); err != nil {
			return err
		}
		p = []byte("o/" + ns + "\x00")
		return r.Iterate(p, func(k, _ []byte) error { listed[string(k[len(p):])] = true; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, dots := range held {
		for d, n := range dots {
			if n != 1 {
				t.Fatalf("%s: %v of %s is covered by %d keys", ns, d, id, n)
			}
		}
		if outside[id] && !listed[id] {
			t.Fatalf("%s: %s holds a dot outside the context but is not listed", ns, id)
		}
	}
}

func beUint(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return n
}

// haves are requesters' contexts for ctx: nothing, everything, earlier
// contexts, random parts of ctx, and contexts holding dots ctx lacks.
func haves(rng *rand.Rand, ctx *crdt.Context, past []*crdt.Context) []*crdt.Context {
	out := []*crdt.Context{crdt.NewContext(), ctx.Clone()}
	if len(past) > 0 {
		out = append(out, past[rng.IntN(len(past))].Clone())
	}
	all := crdt.NewContext().Missing(ctx)
	for _, keep := range []int{50, 90, 98} {
		h := crdt.NewContext()
		for _, rg := range all {
			for c := rg.From; c <= rg.To; c++ {
				if rng.IntN(100) < keep {
					h.Add(crdt.Dot{Replica: rg.Replica, Counter: c})
				}
			}
		}
		out = append(out, h)
	}
	extra := ctx.Clone()
	for range 5 {
		extra.Add(crdt.Dot{Replica: crdt.ReplicaID(7 + rng.IntN(6)), Counter: 1 + uint64(rng.IntN(400))})
	}
	return append(out, extra)
}

type missingAnswer struct {
	entries []string // id and encoded record, in order
	removed *crdt.Context
}

func answer(t *testing.T, f func(fn func(string, *crdt.Record) error) (*crdt.Context, error)) missingAnswer {
	t.Helper()
	var a missingAnswer
	removed, err := f(func(id string, rec *crdt.Record) error {
		a.entries = append(a.entries, id+" "+string(crdt.EncodeRecord(rec)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.removed = removed
	return a
}

func checkMissing(t *testing.T, s *store.Store, ns string, have *crdt.Context, first string) {
	t.Helper()
	want := answer(t, func(fn func(string, *crdt.Record) error) (*crdt.Context, error) {
		return scanMissing(s, ns, have, first, fn)
	})
	for name, f := range map[string]func(fn func(string, *crdt.Record) error) (*crdt.Context, error){
		"Missing": func(fn func(string, *crdt.Record) error) (*crdt.Context, error) {
			return s.Missing(ns, have, first, fn)
		},
		"index": func(fn func(string, *crdt.Record) error) (*crdt.Context, error) {
			return s.MissingVia(false, ns, have, first, fn)
		},
		"scan": func(fn func(string, *crdt.Record) error) (*crdt.Context, error) {
			return s.MissingVia(true, ns, have, first, fn)
		},
	} {
		got := answer(t, f)
		if !slices.Equal(got.entries, want.entries) || !got.removed.Equal(want.removed) {
			t.Fatalf("%s of %s (first %q): entries\n%q\nremoved %v; the scan answers\n%q\nremoved %v",
				name, ns, first, ids(got.entries), crdt.NewContext().Missing(got.removed), ids(want.entries), crdt.NewContext().Missing(want.removed))
		}
	}
}

func ids(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i], _, _ = strings.Cut(e, " ")
	}
	return out
}

// TestOpenRefusesANewerFormat: a store written by a newer mnemo (a format
// version above this binary's) is not opened, rather than written without
// what the newer format keeps.
func TestOpenRefusesANewerFormat(t *testing.T) {
	kv := store.NewMemKV()
	if err := kv.Update(func(w store.Writer) error { return w.Set([]byte("s/format"), []byte("2")) }); err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(kv, store.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer format: %v", err)
	}
}

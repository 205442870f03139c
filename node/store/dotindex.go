package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mnemohq/mnemo/crdt"
)

// The dot index lets Missing find what a requester lacks without reading
// the namespace. Each run of consecutive counters of one replica that a
// record entry holds has a key
//
//	d/<ns>\x00<replica><first><n><id>   (replica and first counter 8 bytes
//	                                    big-endian, n one byte: the run is
//	                                    first..first+n; empty value)
//
// written and deleted in the same transaction as the entry, so the index
// is never behind the records. An edit takes consecutive counters, one per
// field or element it writes, so a new memory's dots are one run and one
// key; an edit that overwrites fields cuts holes in older runs, and so a
// memory has about as many keys as edits of it survive, not one per dot
// (in the simulator: 2 keys per record against 7.4 dots). Runs longer
// than runMax are cut into pieces of runMax.
//
// The keys of one replica sort by first counter, so the records holding a
// dot in a range From..To of the context a requester lacks
// (crdt.Context.Missing: a few ranges per replica) are those whose runs
// start in From−runMax+1..To and reach From: one seek and a walk of at
// most runMax−1 keys more than it finds. Only the records found are read.
// A dot held by two entries (possible only in a hand-built delta) is
// indexed for each.
//
// Why runs: a key per dot finds the same entries but costs a key per
// field an edit writes (7.4 per record in the simulator, and +30% on
// every store write); a key per record and replica (at its highest
// counter) would be smaller still, but a range could then only be looked
// up by walking every entry that replica touched since the range began,
// so one old gap the requester never fills (a write it refuses) would
// cost a walk of most of the namespace on every sync.
//
// A record may hold a dot outside its namespace's context only if a delta
// brought one outside its own context (never one decoded from bytes, nor
// one an Edit built); such a dot lies in none of the ranges, so its entry
// is also listed under o/<ns>\x00<id> and checked dot by dot. An o/ key is
// removed with its entry's retract or when a rewrite leaves the entry
// inside the context; one that outlives the condition (the context grew by
// another delta) costs a read per Missing and changes no answer.

// formatVersion is the version of the key layout Open expects: 1 added the
// dot index. A store without the key is older; Open migrates it.
const formatVersion = 1

var formatKey = []byte("s/format")

// runMax is the longest run one index key covers (at most 256: its length
// is a byte). Longer runs take a key per piece; a lookup walks up to
// runMax−1 keys of runs that end before the range it looks for.
const runMax = 32

// errStop stops a KV walk early; it never leaves the Store.
var errStop = errors.New("store: stop")

func dotPrefix(ns string) []byte      { return []byte("d/" + ns + "\x00") }
func outsideKey(ns, id string) []byte { return []byte("o/" + ns + "\x00" + id) }

// run is the counters first..first+n of one replica.
type run struct {
	replica crdt.ReplicaID
	first   uint64
	n       uint8
}

func (r run) key(ns, id string) []byte {
	k := make([]byte, 0, len("d/")+len(ns)+1+17+len(id))
	k = append(append(append(k, "d/"...), ns...), 0)
	k = binary.BigEndian.AppendUint64(k, uint64(r.replica))
	k = binary.BigEndian.AppendUint64(k, r.first)
	k = append(k, r.n)
	return append(k, id...)
}

func compareRun(a, b run) int {
	return cmp.Or(cmp.Compare(a.replica, b.replica), cmp.Compare(a.first, b.first), cmp.Compare(a.n, b.n))
}

// runsOf is the runs of the sorted dots, each at most runMax long, sorted.
func runsOf(dots []crdt.Dot) []run {
	var out []run
	for i, d := range dots {
		if i > 0 {
			last := &out[len(out)-1]
			if d.Replica == last.replica && d.Counter == last.first+uint64(last.n) {
				continue // a repeat
			}
			if d.Replica == last.replica && d.Counter == last.first+uint64(last.n)+1 && last.n < runMax-1 {
				last.n++
				continue
			}
		}
		out = append(out, run{replica: d.Replica, first: d.Counter})
	}
	return out
}

func holdsDotOutside(dots []crdt.Dot, c *crdt.Context) bool {
	for _, d := range dots {
		if !c.Contains(d) {
			return true
		}
	}
	return false
}

// reindex brings the index from entry id's old state to its new one (nil:
// gone): it deletes the keys of the runs old held and new does not, and
// writes the keys of the runs new holds and old did not. before and after
// are ns's context before and after the write.
func reindex(w Writer, ns, id string, old, new *crdt.Record, before, after *crdt.Context) error {
	od, nd := old.Dots(), new.Dots()
	or, nr := runsOf(od), runsOf(nd)
	i, j := 0, 0
	for i < len(or) || j < len(nr) {
		switch {
		case j == len(nr) || i < len(or) && compareRun(or[i], nr[j]) < 0:
			if err := w.Delete(or[i].key(ns, id)); err != nil {
				return err
			}
			i++
		case i == len(or) || compareRun(nr[j], or[i]) < 0:
			if err := w.Set(nr[j].key(ns, id), nil); err != nil {
				return err
			}
			j++
		default: // held before and after
			i++
			j++
		}
	}
	switch {
	case holdsDotOutside(nd, after):
		return w.Set(outsideKey(ns, id), nil)
	case new == nil && old != nil || holdsDotOutside(od, before):
		return w.Delete(outsideKey(ns, id))
	}
	return nil
}

// Missing calls fn for each record entry of ns holding a dot outside have
// and returns the dots of ns's context outside have that no record holds:
// what a replica whose context is have lacks. Entries whose id starts with
// first come before the others (records that authorise the rest, such as
// signed grants, should arrive no later than what they authorise), in the
// order of their latest timestamp, so that a grant comes after the grant
// that let its signer make it (the hybrid clock runs ahead of every
// timestamp a node has seen) and an answer split in batches never holds,
// in every batch, a grant whose authority is in a later one; the others
// follow in id order.
//
// It reads the dot index for the ranges of the context have lacks, and
// then only the entries found, so its cost follows what is missing, not
// the size of the namespace. A requester that lacks at least half of the
// namespace's dots (a new member) is answered by one scan of the
// namespace instead, which reads each entry once in key order rather than
// seeking to each: the same answer, cheaper when most entries go out.
func (s *Store) Missing(ns string, have *crdt.Context, first string, fn func(id string, rec *crdt.Record) error) (*crdt.Context, error) {
	return s.missing(ns, have, first, fn, missingAuto)
}

// How missing finds the entries: by the rule Missing documents, or (tests)
// one way whatever the requester lacks.
const (
	missingAuto = iota
	missingIndex
	missingScan
)

func (s *Store) missing(ns string, have *crdt.Context, first string, fn func(id string, rec *crdt.Record) error, how int) (*crdt.Context, error) {
	ctx := s.Context(ns)
	ranges := have.Missing(ctx)
	attached := map[crdt.Dot]struct{}{}
	// report passes rec to fn if it holds a dot outside have (an entry the
	// index named for a dot it no longer holds does not).
	report := func(id string, rec *crdt.Record) error {
		outside := false
		for _, d := range rec.Dots() {
			if !have.Contains(d) {
				attached[d] = struct{}{}
				outside = true
			}
		}
		if !outside {
			return nil
		}
		return fn(id, rec)
	}
	var grants *causalFirst
	if first != "" {
		grants = &causalFirst{prefix: first, fn: fn}
		fn = grants.add
	}
	err := s.view(func(r Reader) error {
		if how == missingAuto {
			how = missingIndex
			if len(ranges) > 0 && 2*dotCount(ranges) >= dotCount(crdt.NewContext().Missing(ctx)) {
				how = missingScan
			}
		}
		if how == missingScan {
			return s.missingByScan(r, ns, first, report)
		}
		return s.missingByIndex(r, ns, ranges, first, report)
	})
	if err == nil && grants != nil {
		err = grants.flush()
	}
	if err != nil {
		return nil, err
	}
	return crdt.RemovedDots(ctx, have, attached), nil
}

// causalFirst passes on the records whose id starts with prefix, which
// both walks report before the others, in the order of their latest
// timestamp (then id) rather than id order, and the others as they come.
type causalFirst struct {
	prefix  string
	fn      func(id string, rec *crdt.Record) error
	held    []heldRecord
	flushed bool
}

type heldRecord struct {
	id  string
	rec *crdt.Record
	ts  crdt.Timestamp
}

func (c *causalFirst) add(id string, rec *crdt.Record) error {
	if !c.flushed && strings.HasPrefix(id, c.prefix) {
		c.held = append(c.held, heldRecord{id, rec, rec.MaxTimestamp()})
		return nil
	}
	if err := c.flush(); err != nil {
		return err
	}
	return c.fn(id, rec)
}

func (c *causalFirst) flush() error {
	if c.flushed {
		return nil
	}
	c.flushed = true
	slices.SortFunc(c.held, func(a, b heldRecord) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), strings.Compare(a.id, b.id))
	})
	for _, h := range c.held {
		if err := c.fn(h.id, h.rec); err != nil {
			return err
		}
	}
	c.held = nil
	return nil
}

func dotCount(rs []crdt.DotRange) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.To - r.From + 1
	}
	return n
}

// missingByIndex finds the entries holding a dot in ranges (and those
// listed as holding a dot outside the context) through the index, and
// reports them in Missing's order.
func (s *Store) missingByIndex(r Reader, ns string, ranges []crdt.DotRange, first string, report func(string, *crdt.Record) error) error {
	found := map[string]struct{}{}
	pre := dotPrefix(ns)
	for _, rg := range ranges {
		rp := binary.BigEndian.AppendUint64(bytes.Clone(pre), uint64(rg.Replica))
		from := uint64(1)
		if rg.From > runMax {
			from = rg.From - (runMax - 1) // the first a run reaching From may start at
		}
		start := binary.BigEndian.AppendUint64(bytes.Clone(rp), from)
		err := r.IterateFrom(rp, start, func(k, _ []byte) error {
			if len(k) < len(rp)+9 {
				return fmt.Errorf("store: index key %q: %w", k, crdt.ErrCorrupt)
			}
			first := binary.BigEndian.Uint64(k[len(rp):])
			if first > rg.To {
				return errStop
			}
			if first+uint64(k[len(rp)+8]) >= rg.From {
				found[string(k[len(rp)+9:])] = struct{}{}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
	}
	op := []byte("o/" + ns + "\x00")
	if err := r.Iterate(op, func(k, _ []byte) error {
		found[string(k[len(op):])] = struct{}{}
		return nil
	}); err != nil {
		return err
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if first != "" {
			if fa, fb := strings.HasPrefix(a, first), strings.HasPrefix(b, first); fa != fb {
				if fa {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a, b)
	})
	for _, id := range ids {
		rec, err := s.readRecord(r, ns, id)
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		if err := report(id, rec); err != nil {
			return err
		}
	}
	return nil
}

// missingByScan reads every entry of ns once: those starting with first,
// then the rest.
func (s *Store) missingByScan(r Reader, ns, first string, report func(string, *crdt.Record) error) error {
	visit := func(prefix []byte, skip string) error {
		return r.Iterate(prefix, func(k, v []byte) error {
			_, id := splitNSID(k)
			if skip != "" && strings.HasPrefix(id, skip) {
				return nil
			}
			rec, err := crdt.DecodeRecord(v, s.lim)
			if err != nil {
				return fmt.Errorf("store: record %s in %s: %w", id, ns, err)
			}
			return report(id, rec)
		})
	}
	if first != "" {
		if err := visit(append(recPrefix(ns), first...), ""); err != nil {
			return err
		}
	}
	return visit(recPrefix(ns), first)
}

// migrate brings the key layout to formatVersion. A store older than the
// dot index (no format key) gets its index built, in transactions of
// bounded size; the format key, written last, marks it done, so an
// interrupted migration starts over on the next Open.
func (s *Store) migrate() error {
	var raw []byte
	err := s.kv.View(func(r Reader) error {
		v, err := r.Get(formatKey)
		if errors.Is(err, ErrKeyNotFound) {
			return nil
		}
		raw = v
		return err
	})
	if err != nil {
		return fmt.Errorf("store: reading the format version: %w", err)
	}
	if raw != nil {
		v, err := strconv.Atoi(string(raw))
		switch {
		case err != nil:
			return fmt.Errorf("store: format version %q: %w", raw, crdt.ErrCorrupt)
		case v > formatVersion:
			return fmt.Errorf("store: format version %d is newer than this binary's (%d): open it with a newer mnemo", v, formatVersion)
		case v == formatVersion:
			return nil
		}
	}
	for _, p := range []string{"d/", "o/"} { // left by an interrupted migration
		if err := s.deletePrefix([]byte(p)); err != nil {
			return fmt.Errorf("store: migrating to format %d: %w", formatVersion, err)
		}
	}
	if err := s.buildIndex(); err != nil {
		return fmt.Errorf("store: migrating to format %d: %w", formatVersion, err)
	}
	return s.kv.Update(func(w Writer) error { return w.Set(formatKey, []byte(strconv.Itoa(formatVersion))) })
}

// migrateBatch bounds the keys one migration transaction writes, well
// under what Badger commits at once with a node's memtables.
const migrateBatch = 2000

// deletePrefix deletes every key with prefix, migrateBatch per transaction.
func (s *Store) deletePrefix(prefix []byte) error {
	for {
		var keys [][]byte
		err := s.kv.View(func(r Reader) error {
			return r.Iterate(prefix, func(k, _ []byte) error {
				keys = append(keys, bytes.Clone(k))
				if len(keys) == migrateBatch {
					return errStop
				}
				return nil
			})
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		if err := s.kv.Update(func(w Writer) error {
			for _, k := range keys {
				if err := w.Delete(k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
}

// buildIndex writes the index keys of every record entry, walking the
// entries in key order and committing about migrateBatch keys at a time.
func (s *Store) buildIndex() error {
	start := []byte("r/")
	for {
		var keys [][]byte
		var last []byte
		err := s.kv.View(func(r Reader) error {
			return r.IterateFrom([]byte("r/"), start, func(k, v []byte) error {
				if len(keys) >= migrateBatch {
					return errStop
				}
				ns, id := splitNSID(k)
				rec, err := crdt.DecodeRecord(v, s.lim)
				if err != nil {
					return fmt.Errorf("store: record %s in %s: %w", id, ns, err)
				}
				dots := rec.Dots()
				for _, r := range runsOf(dots) {
					keys = append(keys, r.key(ns, id))
				}
				ctx, ok := s.ctxs[ns]
				if !ok || holdsDotOutside(dots, ctx) {
					keys = append(keys, outsideKey(ns, id))
				}
				last = bytes.Clone(k)
				return nil
			})
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if last == nil {
			return nil
		}
		if err := s.kv.Update(func(w Writer) error {
			for _, k := range keys {
				if err := w.Set(k, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if !errors.Is(err, errStop) {
			return nil
		}
		start = append(last, 0)
	}
}

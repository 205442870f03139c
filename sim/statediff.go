package sim

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/crdt"
)

// stateDiff says how two states of one namespace differ, for a
// convergence violation: whether their contexts and retracted ids agree,
// the records only one holds, and, for the first records both hold
// differently, the fields, set elements and seals that differ. It names
// at most a few of each.
func stateDiff(a, b *crdt.Map) string {
	var out []string
	if !a.Context().Equal(b.Context()) {
		out = append(out, "contexts differ")
	} else {
		out = append(out, "same context")
	}
	if ra, rb := a.RetractedIDs(), b.RetractedIDs(); !slices.Equal(ra, rb) {
		out = append(out, fmt.Sprintf("retracted %d vs %d ids", len(ra), len(rb)))
	}
	var onlyA, onlyB, differ []string
	for _, id := range a.IDs() {
		rb := b.Entry(id)
		switch {
		case rb == nil:
			onlyA = append(onlyA, id)
		case !bytes.Equal(crdt.EncodeRecord(a.Entry(id)), crdt.EncodeRecord(rb)):
			differ = append(differ, id)
		}
	}
	for _, id := range b.IDs() {
		if a.Entry(id) == nil {
			onlyB = append(onlyB, id)
		}
	}
	few := func(ids []string) string { return strings.Join(ids[:min(3, len(ids))], " ") }
	if len(onlyA) > 0 || len(onlyB) > 0 {
		out = append(out, fmt.Sprintf("records only in the first: %d (%s); only in the second: %d (%s)", len(onlyA), few(onlyA), len(onlyB), few(onlyB)))
	}
	out = append(out, fmt.Sprintf("%d records differ", len(differ)))
	for _, id := range differ[:min(2, len(differ))] {
		out = append(out, fmt.Sprintf("record %s: %s", id, recordDiff(a.Entry(id), b.Entry(id))))
	}
	return strings.Join(out, "; ")
}

// recordDiff names what differs between two versions of a record.
func recordDiff(a, b *crdt.Record) string {
	var out []string
	names := slices.Compact(slices.Sorted(slices.Values(append(a.FieldNames(), b.FieldNames()...))))
	for _, n := range names {
		fa, oka := a.Field(n)
		fb, okb := b.Field(n)
		if oka != okb || fa.Dot != fb.Dot || fa.TS != fb.TS || !bytes.Equal(fa.Value, fb.Value) {
			out = append(out, fmt.Sprintf("field %s: %v@%v %.40q vs %v@%v %.40q", n, fa.Dot, fa.TS, fa.Value, fb.Dot, fb.TS, fb.Value))
		}
	}
	if da, db := a.Dots(), b.Dots(); !slices.Equal(da, db) {
		out = append(out, fmt.Sprintf("dots %v vs %v", da, db))
	}
	if sa, sb := len(a.Seals()), len(b.Seals()); sa != sb {
		out = append(out, fmt.Sprintf("%d vs %d seals", sa, sb))
	}
	if len(out) == 0 {
		out = append(out, "same fields and dots (seals or set elements differ)")
	}
	return strings.Join(out, ", ")
}

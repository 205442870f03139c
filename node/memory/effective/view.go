package effective

import (
	"cmp"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
)

// Edit is an audit entry with the clock that orders it within its op (the
// API's Edit carries no storage clock).
type Edit struct {
	memapi.Edit
	TS crdt.Timestamp
}

// Flags is what the effective view decides beyond the memory's fields.
type Flags struct {
	Retracted   bool     // an approved retract: the memory is gone
	Quarantined bool     // held back from automatic retrieval
	Blocked     []string // channels the memory may not be served on, sorted
}

// rank is an op's precedence: lower applies first. An unknown op ranks
// with retract (and changes nothing).
func rank(op string) int {
	switch op {
	case memapi.OpBlock:
		return 1
	case memapi.OpQuarantine:
		return 2
	case memapi.OpAmend:
		return 3
	case memapi.OpAttenuate:
		return 4
	}
	return 0
}

// View applies the approved edits to m (see the package doc) and sets
// m.EditsApplied, m.Quarantined and m.BlockedChannels. It does not modify
// edits; the same memory and edits give the same view in any order.
func View(m memapi.Memory, edits []Edit) (memapi.Memory, Flags) {
	var fl Flags
	var app []Edit
	for _, e := range edits {
		if e.Status == memapi.StatusApproved {
			app = append(app, e)
		}
	}
	if len(app) == 0 {
		return m, fl
	}
	slices.SortFunc(app, func(a, b Edit) int {
		return cmp.Or(cmp.Compare(rank(a.Op), rank(b.Op)), cmp.Compare(a.TS, b.TS), cmp.Compare(a.EditID, b.EditID))
	})
	clamp := func(v float64) float64 { return min(1, max(0, v)) }
	for _, e := range app {
		switch e.Op {
		case memapi.OpRetract:
			fl.Retracted = true
		case memapi.OpBlock:
			if !slices.Contains(fl.Blocked, e.Patch.Channel) {
				fl.Blocked = append(fl.Blocked, e.Patch.Channel)
			}
		case memapi.OpQuarantine:
			fl.Quarantined = true
		case memapi.OpAmend:
			if e.Patch.Text != nil {
				if m.Title == memapi.DeriveTitle(m.Content) {
					m.Title = memapi.DeriveTitle(*e.Patch.Text) // a title taken from the old text goes with it
				}
				m.Content = *e.Patch.Text
				m.ContentHash = schema.ContentHash(m.Content)
			}
			if e.Patch.Importance != nil {
				m.Importance = clamp(*e.Patch.Importance)
			}
		case memapi.OpAttenuate:
			if e.Patch.Importance != nil {
				m.Importance = clamp(*e.Patch.Importance)
			} else if e.Patch.ImportanceDelta != nil {
				m.Importance = clamp(m.Importance + *e.Patch.ImportanceDelta)
			}
		}
	}
	slices.Sort(fl.Blocked)
	m.EditsApplied = len(app)
	m.Quarantined = fl.Quarantined
	m.BlockedChannels = fl.Blocked
	return m, fl
}

// Merge adds what another view decided: hidden or quarantined if either
// says so, blocked on the channels either blocks.
func (f *Flags) Merge(o Flags) {
	f.Retracted = f.Retracted || o.Retracted
	f.Quarantined = f.Quarantined || o.Quarantined
	for _, c := range o.Blocked {
		if !slices.Contains(f.Blocked, c) {
			f.Blocked = append(f.Blocked, c)
		}
	}
	slices.Sort(f.Blocked)
}

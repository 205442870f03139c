package projection

import (
	"fmt"
	"slices"
	"time"
)

// Action is what one change of a source memory means for a view.
type Action uint8

// The actions. See Decide.
const (
	ActionNone    Action = iota // the view does not change
	ActionUpsert                // write Project(after) into the view
	ActionRemove                // remove the id from the view (it may come back later)
	ActionRetract               // retract the id from the view: final, like the source's retract
)

func (a Action) String() string {
	switch a {
	case ActionNone:
		return "none"
	case ActionUpsert:
		return "upsert"
	case ActionRemove:
		return "remove"
	case ActionRetract:
		return "retract"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Decide compiles spec's filter and calls Projector.Decide. An invalid
// filter matches nothing, so the answer is always ActionNone. Use a Projector to compile once.
func Decide(spec Spec, before, after *Item) Action {
	m, err := spec.Filter.compile()
	if err != nil {
		m = nil
	}
	return decide(m, spec.Level, before, after)
}

// Decide says what the change of one source memory from before (nil: it did
// not exist) to after (nil: it was retracted) means for the view:
//
//   - after == nil (retracted) and before matched: ActionRetract, final in
//     the view as in the source. When before did not match, the view lost the
//     memory with an earlier ActionRemove (or never had it), and the source
//     can never bring the id back, so nothing is sent.
//   - after matches: ActionUpsert, unless before matched too and both project
//     to the same item at the spec's level (an edit of a field the level
//     leaves out, such as the content at L1): then ActionNone.
//   - after does not match (including a soft delete) and before matched:
//     ActionRemove.
//   - otherwise ActionNone. In particular a memory that never matched causes
//     no traffic at all, so a subscriber does not learn even the ids of
//     memories outside its filter.
//
// Decide ignores Spec.Live: a snapshot projection (Live false) is filled once,
// at creation (see View), and the node does not call Decide for it.
func (p *Projector) Decide(before, after *Item) Action {
	return decide(p.m, p.spec.Level, before, after)
}

func decide(m *matcher, level Level, before, after *Item) Action {
	match := func(it *Item) bool { return m != nil && it != nil && m.match(it) }
	now, was := match(after), match(before)
	switch {
	case after == nil && was:
		return ActionRetract
	case after == nil:
		return ActionNone
	case now && was && sameItem(Project(*before, level), Project(*after, level)):
		return ActionNone
	case now:
		return ActionUpsert
	case was:
		return ActionRemove
	}
	return ActionNone
}

// sameItem compares items field by field; times compare as instants.
func sameItem(a, b Item) bool {
	return a.ID == b.ID && a.Type == b.Type && a.Title == b.Title &&
		a.Content == b.Content && a.Summary == b.Summary &&
		slices.Equal(a.Tags, b.Tags) && sameFloat(a.Importance, b.Importance) &&
		sameFloat(a.Confidence, b.Confidence) && slices.Equal(a.LinkedFiles, b.LinkedFiles) &&
		a.Scope == b.Scope && a.SubjectType == b.SubjectType && a.SubjectID == b.SubjectID &&
		a.Project == b.Project && a.SessionID == b.SessionID && a.Channel == b.Channel &&
		a.Author == b.Author && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		sameTime(a.DeletedAt, b.DeletedAt) && a.TopicKey == b.TopicKey &&
		a.Lineage == b.Lineage && a.ContentHash == b.ContentHash
}

// sameFloat treats NaN as equal to NaN so an unchanged NaN is no change.
func sameFloat(a, b float64) bool { return a == b || a != a && b != b }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

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

// Held is what a view holds for one source memory when a change of it
// arrives: the "before" of a decision as the node reads it off the view.
type Held uint8

// The states of a view record. See DecideView.
const (
	HeldNothing   Held = iota // no record: never shown (or not yet)
	HeldShown                 // a record the subscriber sees
	HeldRemoved               // a record an earlier ActionRemove soft-deleted
	HeldRetracted             // a retracted record: final, nothing changes it again
)

func (h Held) String() string {
	switch h {
	case HeldNothing:
		return "nothing"
	case HeldShown:
		return "shown"
	case HeldRemoved:
		return "removed"
	case HeldRetracted:
		return "retracted"
	}
	return fmt.Sprintf("Held(%d)", uint8(h))
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

// DecideView compiles spec's filter and calls Projector.DecideView.
func DecideView(spec Spec, held Held, after *Item) Action {
	m, err := spec.Filter.compile()
	if err != nil {
		m = nil
	}
	return decideView(m, held, after)
}

// DecideView says what the view must do for one source memory, given what
// the view holds for it now (held) and the source memory now (after; nil:
// the source retracted it). This is the decision the node runs after every
// change it applies and when it reconciles a view with its source: reading
// "before" off the view instead of remembering it makes the decision
// idempotent, so a view a crash left behind is repaired by deciding again.
//
//   - held == HeldRetracted: ActionNone, whatever happened (final).
//   - after == nil (retracted) and the view holds a record, shown or
//     removed: ActionRetract, final in the view as in the source; a retract
//     drops content everywhere, so a removed record goes too. With nothing
//     held: ActionNone.
//   - after matches (a soft-deleted or quarantined memory never does):
//     ActionUpsert. The caller writes only what differs from the record it
//     holds, and reports ActionNone when nothing did.
//   - after does not match and the view shows it: ActionRemove (not final:
//     a memory that matches again is upserted again).
//   - otherwise ActionNone. In particular a memory that never matched causes
//     no traffic at all, so a subscriber does not learn even the ids of
//     memories outside its filter.
//
// DecideView ignores Spec.Live: a snapshot projection (Live false) is
// filled once, at creation (see View), and the node does not call it later.
func (p *Projector) DecideView(held Held, after *Item) Action {
	return decideView(p.m, held, after)
}

func decideView(m *matcher, held Held, after *Item) Action {
	switch {
	case held == HeldRetracted:
		return ActionNone
	case after == nil && held != HeldNothing:
		return ActionRetract
	case after == nil:
		return ActionNone
	case m != nil && m.match(after):
		return ActionUpsert
	case held == HeldShown:
		return ActionRemove
	}
	return ActionNone
}

// Decide is DecideView for a caller that remembers the source memory as
// it was (before; nil: it did not exist) instead of reading the view:
//
//   - the view is taken to show the memory when before matched, and to
//     hold nothing otherwise. Such a caller cannot tell a record an
//     earlier ActionRemove soft-deleted from none, so a retract of a
//     memory that did not match before is ActionNone here (DecideView,
//     knowing the view holds it, says ActionRetract);
//   - an upsert of a memory that matched before and projects to the same
//     item at the spec's level (an edit of a field the level leaves out,
//     such as the content at L1) is ActionNone: the view already shows it.
func (p *Projector) Decide(before, after *Item) Action {
	return decide(p.m, p.spec.Level, before, after)
}

func decide(m *matcher, level Level, before, after *Item) Action {
	held := HeldNothing
	if m != nil && before != nil && m.match(before) {
		held = HeldShown
	}
	a := decideView(m, held, after)
	if a == ActionUpsert && held == HeldShown && sameItem(Project(*before, level), Project(*after, level)) {
		return ActionNone
	}
	return a
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
		sameTime(a.DeletedAt, b.DeletedAt) && a.Quarantined == b.Quarantined && a.TopicKey == b.TopicKey &&
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

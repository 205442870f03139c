package transfer

import (
	"fmt"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
)

// importedSession is a session read from an export, restored with its times.
type importedSession struct {
	start   memapi.SessionStart
	started time.Time  // zero: the import time
	ended   *time.Time // nil: still open
	summary string
}

// check applies the rules StartSession and EndSession apply, and refuses
// times beyond future.
func (is importedSession) check(future timeBound) error {
	if err := memory.CheckSessionID(is.start.ID); err != nil {
		return err
	}
	if err := future.checkOne("started_at", is.started); err != nil {
		return err
	}
	if is.ended != nil {
		if err := future.checkOne("ended_at", *is.ended); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"project", is.start.Project}, {"directory", is.start.Directory}} {
		if err := memapi.CheckText(f.name, f.v, memapi.MaxPathBytes); err != nil {
			return err
		}
	}
	return memapi.CheckText("summary", is.summary, memapi.MaxContentBytes)
}

// timeBound refuses imported times further ahead of now than skew, the
// forward skew the node's clock tolerates from peers. A record dated years
// ahead would sort first in every timeline and escape every age-based rule
// (compaction candidates, capsule expiry) until then.
type timeBound struct {
	now  time.Time
	skew time.Duration
}

func (b timeBound) checkOne(field string, t time.Time) error {
	// Compared in milliseconds, as crdt.Clock.Check: a Duration overflows
	// for a time some 292 years ahead, which must be refused too.
	if ahead := t.UnixMilli() - b.now.UnixMilli(); ahead > b.skew.Milliseconds() {
		return invalid("%s %s is in the future (this node's clock reads %s; at most %v ahead is accepted)",
			field, t.UTC().Format(time.RFC3339), b.now.UTC().Format(time.RFC3339), b.skew)
	}
	return nil
}

// check applies checkOne to a memory's times; zero times and a nil deleted
// are absent.
func (b timeBound) check(created, updated time.Time, deleted *time.Time) error {
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"created_at", created}, {"updated_at", updated}} {
		if f.t.IsZero() {
			continue
		}
		if err := b.checkOne(f.name, f.t); err != nil {
			return err
		}
	}
	if deleted != nil {
		return b.checkOne("deleted_at", *deleted)
	}
	return nil
}

// checkIDFree refuses an imported id that a memory of another namespace
// already has: ids are global (the index and Get know a memory by its id
// alone), so a second memory under the same id would shadow the first.
func (t *Transfer) checkIDFree(id string, ns namespace.Address) error {
	if in, ok := t.core.IndexedIn(id); ok && in != ns.String() {
		return invalid("id %q is already used by a memory in another namespace", id)
	}
	return nil
}

// checkProvenance validates what PreserveProvenance keeps of a memory.
func checkProvenance(m memapi.Memory) error {
	if m.Author != "" {
		if _, err := namespace.ParsePrincipal(m.Author); err != nil {
			return fmt.Errorf("%w: author %q: %w", memapi.ErrInvalid, m.Author, err)
		}
	}
	if m.Lineage != "" {
		if err := memory.CheckMemoryID(m.Lineage); err != nil {
			return fmt.Errorf("lineage: %w", err)
		}
	}
	for _, p := range m.Provenance {
		if err := memapi.CheckText("provenance", p, memapi.MaxKeyBytes); err != nil {
			return err
		}
	}
	return nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{memapi.ErrInvalid}, a...)...)
}

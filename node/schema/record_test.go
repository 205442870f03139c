package schema

import (
	"testing"
	"time"

	"github.com/mnemohq/mnemo/crdt"
)

// Field and set names share one record, so no two may collide.
func TestNamesDistinct(t *testing.T) {
	names := []string{FieldKind, FieldType, FieldTitle, FieldContent, FieldSummary, FieldTopicKey,
		FieldImportance, FieldConfidence, FieldScope, FieldSubjectType, FieldSubjectID, FieldProject,
		FieldSessionID, FieldChannel, FieldAuthor, FieldCreatedAt, FieldUpdatedAt, FieldDeletedAt,
		FieldLineage, FieldHash, FieldCopiedFrom, FieldProjFrom, FieldDirectory, FieldEndedAt,
		FieldACL, FieldProjSpec, FieldEdit, FieldDecision, FieldCapsule, FieldRevokedAt,
		SetTags, SetLinkedFiles, SetProvenance, crdt.WitnessSet}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("name %q used twice", n)
		}
		seen[n] = true
	}
}

func TestToMemoryReadsWhatWasWritten(t *testing.T) {
	m := crdt.NewMap()
	e, err := m.Edit(1, "m1", crdt.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC)
	ts := crdt.MakeTimestamp(now.UnixMilli(), 0)
	for _, f := range []struct {
		name string
		v    []byte
	}{{FieldTitle, []byte("t")}, {FieldContent, []byte("c")}, {FieldImportance, EncodeNum(0.25)},
		{FieldCreatedAt, EncodeTime(now)}, {FieldDeletedAt, EncodeTime(now)}} {
		if err := e.Set(ts, f.name, f.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := firstErr(e.Add(SetTags, "x"), Touch(e, ts, now.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	m.Join(e.Delta())
	r, _ := m.Get("m1")
	got := ToMemory("team://a", "m1", r)
	if got.Title != "t" || got.Content != "c" || got.Importance != 0.25 || len(got.Tags) != 1 || got.Tags[0] != "x" ||
		!got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now.Add(time.Second)) || got.DeletedAt == nil ||
		got.LinkedFiles != nil || got.Provenance != nil || got.From != "" {
		t.Fatalf("read back %+v", got)
	}
	if string(EncodeTime(now)) != "1740830400000000005" {
		t.Fatalf("time encoding changed: %s", EncodeTime(now))
	}
}

func TestKinds(t *testing.T) {
	m := crdt.NewMap()
	if _, err := m.Set(1, 1, SessionPrefix+"abc", FieldKind, []byte(KindSession)); err != nil {
		t.Fatal(err)
	}
	r, _ := m.Get(SessionPrefix + "abc")
	if !IsSession(r) || IsACL(r) || IsEdit(r) || IsDecision(r) || IsProjSpec(r) {
		t.Fatal("kind predicates disagree")
	}
	if s := ToSession("team://a", SessionPrefix+"abc", r); s.ID != "abc" {
		t.Fatalf("session id %q", s.ID)
	}
	for id, want := range map[string]bool{"edit:1": true, "appr:1": true, "acl:1": true, "s:1": false, "m1": false} {
		if IsReserved(id) != want {
			t.Errorf("IsReserved(%q) = %v", id, !want)
		}
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func TestIsCapsuleInbox(t *testing.T) {
	for ns, want := range map[string]bool{
		"agent://bob/.inbox/alice/capsule-01ABC":       true,
		"agent://bob/.inbox/alice/proj-01ABC":          false, // a projection's inbox
		"agent://bob/.inbox/alice/capsule-01ABC/x":     false, // below an inbox
		"agent://bob/.inbox/Not An Agent/capsule-01AB": false,
		"team://t/.inbox/alice/capsule-01ABC":          false, // only agents have inboxes
		"agent://bob/notes/alice/capsule-01ABC":        false,
		"agent://bob":                                  false,
	} {
		if got := IsCapsuleInbox(ns); got != want {
			t.Errorf("IsCapsuleInbox(%q) = %v, want %v", ns, got, want)
		}
	}
}

// Time and Num read absent, empty, malformed and well-formed values as
// before they skipped parsing what is absent.
func TestTimeAndNumOfEveryKindOfValue(t *testing.T) {
	m := crdt.NewMap()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, f := range []struct{ name, v string }{
		{"t_ok", string(EncodeTime(at))}, {"t_zero", "0"}, {"t_bad", "soon"}, {"t_empty", ""},
		{"n_ok", "0.25"}, {"n_bad", "x"}, {"n_empty", ""},
	} {
		d, err := m.Set(1, crdt.Timestamp(len(f.name)+len(f.v)+1)<<20, "m1", f.name, []byte(f.v))
		if err != nil {
			t.Fatal(err)
		}
		m.Join(d)
	}
	r := m.Entry("m1")
	for name, want := range map[string]time.Time{"t_ok": at, "t_zero": {}, "t_bad": {}, "t_empty": {}, "t_absent": {}} {
		if got := Time(r, name); !got.Equal(want) {
			t.Errorf("Time(%s) = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]float64{"n_ok": 0.25, "n_bad": 0, "n_empty": 0, "n_absent": 0} {
		if got := Num(r, name); got != want {
			t.Errorf("Num(%s) = %v, want %v", name, got, want)
		}
	}
}

// BenchmarkTimeAbsent: reading a time a memory does not have (deleted_at
// of a live one), as every memory shown does.
func BenchmarkTimeAbsent(b *testing.B) {
	r := crdt.NewRecord()
	b.ReportAllocs()
	for b.Loop() {
		if !Time(r, FieldDeletedAt).IsZero() {
			b.Fatal("a time read from nothing")
		}
	}
}

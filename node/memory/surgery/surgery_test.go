package surgery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/memory"
	"github.com/mnemohq/mnemo/node/memory/memorytest"
	"github.com/mnemohq/mnemo/node/memory/transfer"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
	"github.com/mnemohq/mnemo/node/store/badgerkv/badgerkvtest"
)

// TestSurgeryScenarios runs testdata/surgery/*.txt with datadriven. A file
// is blocks separated by blank lines; a block is a command line, "----", and
// its expected output (`go test -run TestSurgeryScenarios -rewrite`
// regenerates them). Lines starting with # are comments. Two replicas, a
// and b, hold team://t (alice created it; bob and carol are members, dave
// reads; every principal is local to both). Values use _ for spaces.
//
//	open [approvals=OP,OP]                 (first) open the replicas; ops needing approval in team://t
//	save NAME [content=T] [importance=X] [channel=C] [prov=NAME]
//	edit NAME OP [reason=R] [text=T] [importance=X] [delta=D] [channel=C] [as=P] [on=b]
//	approve|reject EDIT [as=P] [on=b]
//	sync                                   join a and b both ways
//	clock b -1m                            move a replica's wall clock
//	show NAME [on=b] [channel=C]           the effective view (Get)
//	search WORD [channel=C] [quarantined=true] [on=b]
//	context [channel=C] [quarantined=true] [on=b]
//	timeline NAME [on=b]
//	audit [NAME] [status=S] [on=b]
//
// Commands default to replica a and principal alice. Edits are named e1,
// e2, … in the order made.
func TestSurgeryScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/surgery", func(t *testing.T, file string) {
		w := &surgeryWorld{t: t, reps: map[string]*memory.Service{}, clocks: map[string]*memorytest.Clock{}, mems: map[string]string{},
			names: map[string]string{}, edits: map[string]string{}, enames: map[string]string{}}
		datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
			got, err := w.run(d)
			if err != nil {
				got = "error: " + err.Error()
			}
			return w.rename(got)
		})
	})
}

type surgeryWorld struct {
	t       *testing.T
	reps    map[string]*memory.Service
	clocks  map[string]*memorytest.Clock
	mems    map[string]string // name → id
	names   map[string]string // id → name
	edits   map[string]string // name → edit id
	enames  map[string]string // edit id → name
	counter int
}

const scenarioNS = "team://t"

func (w *surgeryWorld) open(approvals Approvals) {
	for i, r := range []string{"a", "b"} {
		s, clk := openWith(w.t, crdt.ReplicaID(i+1), approvals)
		w.reps[r], w.clocks[r] = s, clk
	}
	memorytest.Create(w.t, w.reps["a"], "alice", scenarioNS)
	memorytest.Grant(w.t, w.reps["a"], "alice", scenarioNS, "bob", "member")
	memorytest.Grant(w.t, w.reps["a"], "alice", scenarioNS, "carol", "member")
	memorytest.Grant(w.t, w.reps["a"], "alice", scenarioNS, "dave", "read")
	w.sync()
}

func (w *surgeryWorld) sync() {
	for _, p := range [][2]string{{"a", "b"}, {"b", "a"}} {
		st, err := w.reps[p[0]].Store().State(scenarioNS)
		if err != nil {
			w.t.Fatal(err)
		}
		if err := w.reps[p[1]].ApplyRemote(scenarioNS, st); err != nil {
			w.t.Fatalf("sync %s → %s: %v", p[0], p[1], err)
		}
	}
}

func (w *surgeryWorld) run(d *datadriven.TestData) (string, error) {
	cmd, args := d.Cmd, map[string]string{}
	var pos []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
		} else {
			args[a.Key] = strings.ReplaceAll(strings.Join(a.Vals, ","), "_", " ")
		}
	}
	if cmd == "open" {
		var ap Approvals
		if v := args["approvals"]; v != "" {
			ap = Approvals{scenarioNS: strings.Split(v, ",")}
		}
		w.open(ap)
		return "ok", nil
	}
	if len(w.reps) == 0 {
		w.open(nil)
	}
	ctx := context.Background()
	on := w.reps["a"]
	if args["on"] != "" {
		on = w.reps[args["on"]]
	}
	as := memorytest.Agent("alice")
	if args["as"] != "" {
		as = memorytest.Agent(args["as"])
	}
	num := func(k string) *float64 {
		v, ok := args[k]
		if !ok {
			return nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			w.t.Fatalf("%s: %v", d.Pos, err)
		}
		return &x
	}
	strp := func(k string) *string {
		if v, ok := args[k]; ok {
			return &v
		}
		return nil
	}
	filter := memapi.Filter{Channel: args["channel"], IncludeQuarantined: args["quarantined"] == "true"}
	switch cmd {
	case "sync":
		w.sync()
		return "ok", nil
	case "clock":
		d, err := time.ParseDuration(pos[1])
		if err != nil {
			return "", err
		}
		w.clocks[pos[0]].Advance(d)
		return "ok", nil
	case "save":
		req := memapi.SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "content of " + pos[0], Importance: num("importance"), Channel: args["channel"]}
		if v, ok := args["content"]; ok {
			req.Content = v
		}
		var o memory.SaveOptions
		if src := args["prov"]; src != "" {
			o.Provenance = []string{"source:" + w.mems[src]}
			req.Type = "compaction_summary"
		}
		ns := namespace.MustParse(scenarioNS)
		var id string
		core := Of(on).core
		err := core.Write(func(tx *store.Tx) error {
			r, err := core.SaveTx(tx, as, ns, req, o)
			id = r.ID
			return err
		})
		if err != nil {
			return "", err
		}
		w.mems[pos[0]], w.names[id] = id, pos[0]
		return "ok", nil
	case "edit":
		reason := "scenario"
		if v, ok := args["reason"]; ok {
			reason = v
		}
		target := w.mems[pos[0]]
		if target == "" {
			target = pos[0]
		}
		op := ""
		if len(pos) > 1 {
			op = pos[1]
		}
		res, err := Of(on).Propose(ctx, as, memapi.EditRequest{TargetID: target, Op: op, Reason: reason,
			Patch: memapi.EditPatch{Text: strp("text"), Importance: num("importance"), ImportanceDelta: num("delta"), Channel: args["channel"]}})
		if err != nil {
			return "", err
		}
		w.counter++
		name := fmt.Sprintf("e%d", w.counter)
		w.edits[name], w.enames[res.EditID] = res.EditID, name
		return name + " " + res.Status, nil
	case "approve", "reject":
		e, err := Of(on).Decide(ctx, as, w.edits[pos[0]], cmd == "approve")
		if err != nil {
			return "", err
		}
		return w.fmtEdit(e), nil
	case "show":
		m, err := on.Get(ctx, as, w.mems[pos[0]], true)
		if err != nil {
			return "", err
		}
		return w.fmtMem(m), nil
	case "search":
		r, err := on.Search(ctx, as, memapi.SearchQuery{Query: pos[0], Filter: filter, Limit: 100})
		if err != nil {
			return "", err
		}
		var out []string
		for _, h := range r.Results {
			out = append(out, w.rename(w.fmtMem(h.Memory)))
		}
		slices.Sort(out) // equal scores tie by random id: the set is what counts
		return orNone(out), nil
	case "context":
		r, err := on.Context(ctx, as, memapi.ContextQuery{Filter: filter})
		if err != nil {
			return "", err
		}
		var out []string
		for _, m := range r.Memories {
			out = append(out, w.rename(w.fmtMem(m)))
		}
		slices.Sort(out) // saved at the same instant: order ties by random id
		return orNone(out), nil
	case "timeline":
		tl, err := on.Timeline(ctx, as, memapi.TimelineQuery{ID: w.mems[pos[0]], Filter: filter})
		if err != nil {
			return "", err
		}
		var out []string
		for _, m := range append(append(tl.Before, tl.Center), tl.After...) {
			out = append(out, w.names[m.ID])
		}
		return strings.Join(out, " "), nil
	case "audit":
		q := memapi.AuditQuery{Status: args["status"]}
		if len(pos) > 0 {
			q.ID = w.mems[pos[0]]
		}
		r, err := Of(on).Audit(ctx, as, q)
		if err != nil {
			return "", err
		}
		var out []string
		for _, e := range r.Edits {
			out = append(out, w.fmtEdit(e))
		}
		for _, rs := range r.NeedsResummary {
			var src []string
			for _, id := range rs.Retracted {
				src = append(src, w.names[id])
			}
			out = append(out, fmt.Sprintf("resummary %s (sources %s retracted)", w.names[rs.ID], strings.Join(src, ",")))
		}
		return orNone(out), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

// rename replaces memory and edit ids (random) by their scenario names.
func (w *surgeryWorld) rename(s string) string {
	for id, name := range w.names {
		s = strings.ReplaceAll(s, id, name)
	}
	for id, name := range w.enames {
		s = strings.ReplaceAll(s, id, name)
	}
	return s
}

func orNone(out []string) string {
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

func (w *surgeryWorld) fmtMem(m memapi.Memory) string {
	s := fmt.Sprintf("%s: %q importance=%g", w.names[m.ID], m.Content, m.Importance)
	if m.Quarantined {
		s += " quarantined"
	}
	if len(m.BlockedChannels) > 0 {
		s += " blocked=" + strings.Join(m.BlockedChannels, ",")
	}
	if m.EditsApplied > 0 {
		s += fmt.Sprintf(" edits=%d", m.EditsApplied)
	}
	if len(m.NeedsResummary) > 0 {
		var src []string
		for _, id := range m.NeedsResummary {
			src = append(src, w.names[id])
		}
		s += " needs_resummary=" + strings.Join(src, ",")
	}
	return s
}

func (w *surgeryWorld) fmtEdit(e memapi.Edit) string {
	s := fmt.Sprintf("%s %s %s by %s: %s", w.enames[e.EditID], e.Op, w.names[e.TargetID], strings.TrimPrefix(e.Proposer, "agent://"), e.Status)
	if e.Approver != "" {
		s += " (" + strings.TrimPrefix(e.Approver, "agent://") + ")"
	}
	return s
}

// openWith opens a Service owned by alice on which every agent of
// memorytest.Principals is local, with the surgery feature and approvals
// (and transfer, whose export the scenarios and memorytest.Snapshot read).
func openWith(t *testing.T, replica crdt.ReplicaID, approvals Approvals) (*memory.Service, *memorytest.Clock) {
	t.Helper()
	surg, err := New(approvals)
	if err != nil {
		t.Fatal(err)
	}
	return memorytest.Open(t, memory.Config{IsLocal: memorytest.AllLocal, Replica: replica, Features: []memory.Feature{surg, transfer.New()}})
}

// openTest opens a Service owned by alice, its only local agent, with the
// surgery feature.
func openTest(t *testing.T, dir string) (*memory.Service, *memorytest.Clock, memapi.Caller) {
	t.Helper()
	surg, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, clk := memorytest.Open(t, memory.Config{KV: badgerkvtest.In(t, dir), Features: []memory.Feature{surg}})
	return s, clk, memorytest.Agent("alice")
}

func ptr[T any](v T) *T { return &v }

// TestSurgeryReplicas: an edit made on one replica shows in every query
// on the other once the namespace's state arrives, and an approval made
// there takes effect back here.
func TestSurgeryReplicas(t *testing.T) {
	ctx := context.Background()
	w := &surgeryWorld{t: t, reps: map[string]*memory.Service{}, clocks: map[string]*memorytest.Clock{}, mems: map[string]string{},
		names: map[string]string{}, edits: map[string]string{}, enames: map[string]string{}}
	w.open(Approvals{scenarioNS: {memapi.OpQuarantine}})
	a, b := w.reps["a"], w.reps["b"]
	alice, bob := memorytest.Agent("alice"), memorytest.Agent("bob")
	m := memorytest.Save(t, a, alice, memapi.SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "kafka retention is seven days", Channel: "public"})
	other := memorytest.Save(t, a, alice, memapi.SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "kafka brokers run on three hosts"})
	w.sync()
	text := "kafka retention is thirty days"
	if _, err := Of(b).Propose(ctx, bob, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: "wrong number", Patch: memapi.EditPatch{Text: &text}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Of(b).Propose(ctx, bob, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpBlock, Reason: "internal", Patch: memapi.EditPatch{Channel: "public"}}); err != nil {
		t.Fatal(err)
	}
	q, err := Of(b).Propose(ctx, bob, memapi.EditRequest{TargetID: other.ID, Op: memapi.OpQuarantine, Reason: "unverified"})
	if err != nil || q.Status != memapi.StatusPending {
		t.Fatalf("quarantine: %+v %v", q, err)
	}
	w.sync()
	for name, s := range map[string]*memory.Service{"a": a, "b": b} {
		got, err := s.Get(ctx, alice, m.ID, false)
		if err != nil || got.Content != text {
			t.Fatalf("%s: get %+v %v", name, got, err)
		}
		if r, _ := s.Search(ctx, alice, memapi.SearchQuery{Query: "seven"}); r.Total != 0 {
			t.Fatalf("%s: the old text is still searchable: %+v", name, r)
		}
		if r, _ := s.Search(ctx, alice, memapi.SearchQuery{Query: "thirty"}); r.Total != 1 {
			t.Fatalf("%s: the amended text is not searchable: %+v", name, r)
		}
		if r, _ := s.Search(ctx, alice, memapi.SearchQuery{Query: "kafka", Filter: memapi.Filter{Channel: "public"}}); r.Total != 0 {
			t.Fatalf("%s: blocked memory in a public search: %+v", name, r)
		}
		cx, _ := s.Context(ctx, alice, memapi.ContextQuery{})
		if !slices.Contains(memorytest.IDs(cx.Memories), other.ID) || strings.Contains(cx.Text, "seven") {
			t.Fatalf("%s: context %q", name, cx.Text)
		}
		ex, _ := transfer.Of(s).Export(ctx, alice, scenarioNS)
		if slices.ContainsFunc(ex.Memories, func(x memapi.Memory) bool { return strings.Contains(x.Content, "seven") }) {
			t.Fatalf("%s: export has the old text", name)
		}
		au, _ := Of(s).Audit(ctx, alice, memapi.AuditQuery{})
		if len(au.Edits) != 3 {
			t.Fatalf("%s: audit %+v", name, au)
		}
	}
	// The pending quarantine is approved on a: it hides the memory on b.
	if _, err := Of(a).Decide(ctx, alice, q.EditID, true); err != nil {
		t.Fatal(err)
	}
	w.sync()
	for name, s := range map[string]*memory.Service{"a": a, "b": b} {
		cx, _ := s.Context(ctx, alice, memapi.ContextQuery{})
		if slices.Contains(memorytest.IDs(cx.Memories), other.ID) {
			t.Fatalf("%s: quarantined memory in the context", name)
		}
		if r, _ := s.Search(ctx, alice, memapi.SearchQuery{Query: "brokers", Filter: memapi.Filter{IncludeQuarantined: true}}); r.Total != 1 {
			t.Fatalf("%s: include_quarantined does not show it: %+v", name, r)
		}
	}
	// A retract on b purges the record on a.
	if _, err := Of(b).Propose(ctx, bob, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpRetract, Reason: "pii"}); err != nil {
		t.Fatal(err)
	}
	w.sync()
	for name, s := range map[string]*memory.Service{"a": a, "b": b} {
		if _, err := s.Get(ctx, alice, m.ID, true); !errors.Is(err, memapi.ErrNotFound) {
			t.Fatalf("%s: retracted memory readable: %v", name, err)
		}
		if rec, _ := s.Store().Record(scenarioNS, m.ID); !rec.Empty() {
			t.Fatalf("%s: retracted memory's record still stored", name)
		}
		if au, _ := Of(s).Audit(ctx, alice, memapi.AuditQuery{ID: m.ID}); len(au.Edits) != 3 {
			t.Fatalf("%s: audit of the retracted memory %+v", name, au)
		}
	}
	// Reopen-equivalent: a fresh replica that gets the whole state agrees.
	c, _ := openWith(t, 3, nil)
	st, _ := a.Store().State(scenarioNS)
	if err := c.ApplyRemote(scenarioNS, st); err != nil {
		t.Fatal(err)
	}
	if memorytest.Snapshot(t, c, alice) != memorytest.Snapshot(t, a, alice) {
		t.Fatal("a fresh replica's view differs")
	}
}

// auditLen is the number of audit entries alice sees on s.
func auditLen(t *testing.T, s *memory.Service) int {
	t.Helper()
	au, err := Of(s).Audit(context.Background(), memorytest.Agent("alice"), memapi.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(au.Edits)
}

// TestAuditCannotShrink tries every verb that deletes or overwrites and
// checks the audit log never gets shorter (invariant 5).
func TestAuditCannotShrink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := &memorytest.Clock{T: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	open := func() *memory.Service {
		surg, err := New(Approvals{"*": {memapi.OpAmend}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := memory.Open(memory.Config{KV: badgerkvtest.In(t, dir), Agent: memorytest.Agent("alice").Principal, Now: clk.Now, Features: []memory.Feature{surg, transfer.New()}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	alice := memorytest.Agent("alice")
	var ids []string
	for i := range 4 {
		ids = append(ids, memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Content: fmt.Sprintf("memory %d", i)}).ID)
	}
	text := "amended"
	propose := func(id, op string, p memapi.EditPatch) memapi.EditResult {
		t.Helper()
		r, err := Of(s).Propose(ctx, alice, memapi.EditRequest{TargetID: id, Op: op, Reason: "test", Patch: p})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	propose(ids[0], memapi.OpQuarantine, memapi.EditPatch{})
	am := propose(ids[1], memapi.OpAmend, memapi.EditPatch{Text: &text})
	propose(ids[2], memapi.OpBlock, memapi.EditPatch{Channel: "team"})
	n := auditLen(t, s)
	if n != 3 {
		t.Fatalf("audit %d", n)
	}
	grew := func(what string) {
		t.Helper()
		if m := auditLen(t, s); m < n {
			t.Fatalf("%s: audit shrank from %d to %d", what, n, m)
		} else {
			n = m
		}
	}
	var editIDs []string
	Of(s).surg.mu.RLock()
	for id := range Of(s).surg.edits {
		editIDs = append(editIDs, id)
	}
	Of(s).surg.mu.RUnlock()
	ns := "agent://alice"
	for _, id := range editIDs {
		for _, target := range []string{id, schema.EditPrefix + id} {
			_ = s.Delete(ctx, alice, target, false)
			_ = s.Delete(ctx, alice, target, true)
			_ = s.Retract(ctx, alice, target)
			_, _ = s.Update(ctx, alice, target, memapi.UpdateRequest{Content: &text})
			_, _ = s.Compact(ctx, alice, memapi.CompactRequest{CompactIDs: []string{target}, SummaryTitle: "s", SummaryContent: "s"})
		}
		grew("memory verbs on " + id)
		if _, err := s.Save(ctx, alice, memapi.SaveRequest{Type: "x", Content: "y", TopicKey: "t"}); err != nil {
			t.Fatal(err)
		}
		// A peer's retract of the record, and an overwrite with another edit's bytes.
		rec, err := s.Store().Record(ns, schema.EditPrefix+id)
		if err != nil || rec.Empty() {
			t.Fatalf("edit record %s: %v", id, err)
		}
		if err := s.ApplyRemote(ns, crdt.RetractDelta(rec, schema.EditPrefix+id)); err == nil {
			t.Fatal("ApplyRemote accepted the retract of an edit record")
		}
		other := editIDs[(slices.Index(editIDs, id)+1)%len(editIDs)]
		orec, _ := s.Store().Record(ns, schema.EditPrefix+other)
		f, _ := orec.Field(schema.FieldEdit)
		d := crdt.NewMap()
		e, _ := d.Edit(99, schema.EditPrefix+id, crdt.Limits{})
		_ = e.Set(crdt.Timestamp(1)<<62, schema.FieldKind, []byte(schema.KindEdit))
		_ = e.Set(crdt.Timestamp(1)<<62, schema.FieldEdit, f.Value)
		if err := s.ApplyRemote(ns, e.Delta()); err == nil {
			t.Fatal("ApplyRemote accepted an overwrite of an edit record")
		}
		grew("ApplyRemote on " + id)
	}
	// Soft and hard deletes of the targets, compaction, import over them.
	if _, err := s.Compact(ctx, alice, memapi.CompactRequest{CompactIDs: []string{ids[0]}, SummaryTitle: "sum", SummaryContent: "sum"}); err != nil {
		t.Fatal(err)
	}
	grew("compact execute")
	if err := s.Delete(ctx, alice, ids[2], true); err != nil {
		t.Fatal(err)
	}
	grew("hard delete of a target")
	ex, _ := transfer.Of(s).Export(ctx, alice, "")
	b, _ := json.Marshal(ex)
	if _, err := transfer.Of(s).Import(ctx, alice, "", b); err != nil {
		t.Fatal(err)
	}
	grew("import")
	// Decisions add; a decided edit cannot be decided again.
	if _, err := Of(s).Decide(ctx, alice, am.EditID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := Of(s).Decide(ctx, alice, am.EditID, true); !errors.Is(err, memapi.ErrConflict) {
		t.Fatalf("second decision: %v", err)
	}
	grew("decide")
	s.Close()
	s = open()
	defer s.Close()
	grew("reopen")
	if e, _ := Of(s).auditEntry(am.EditID); e.Status != memapi.StatusRejected {
		t.Fatalf("after reopen: %+v", e)
	}
}

// TestSurgeryValidation: bad requests are refused with a message and
// record nothing; permissions are checked.
func TestSurgeryValidation(t *testing.T) {
	ctx := context.Background()
	s, _ := openWith(t, 0, Approvals{"*": {memapi.OpRetract}})
	alice, bob, dave := memorytest.Agent("alice"), memorytest.Agent("bob"), memorytest.Agent("dave")
	memorytest.Create(t, s, "alice", scenarioNS)
	memorytest.Grant(t, s, "alice", scenarioNS, "bob", "member")
	memorytest.Grant(t, s, "alice", scenarioNS, "dave", "read")
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Namespace: scenarioNS, Type: "decision", Content: "x"})
	imp, bad := 0.5, 1.5
	txt := "t"
	for _, tc := range []struct {
		c    memapi.Caller
		req  memapi.EditRequest
		want error
		msg  string
	}{
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpQuarantine}, memapi.ErrInvalid, "reason is required"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: "erase", Reason: "r"}, memapi.ErrInvalid, "unknown op"},
		{alice, memapi.EditRequest{TargetID: m.ID, Reason: "r"}, memapi.ErrInvalid, "op is required"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: "r"}, memapi.ErrInvalid, "amend needs"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAttenuate, Reason: "r"}, memapi.ErrInvalid, "attenuate needs"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpBlock, Reason: "r"}, memapi.ErrInvalid, "block needs"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpBlock, Reason: "r", Patch: memapi.EditPatch{Channel: "tv"}}, memapi.ErrInvalid, "channel"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: "r", Patch: memapi.EditPatch{Importance: &bad}}, memapi.ErrInvalid, "0..1"},
		{alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpRetract, Reason: "r", Patch: memapi.EditPatch{Text: &txt}}, memapi.ErrInvalid, "no patch.text"},
		{alice, memapi.EditRequest{TargetID: "01NOSUCHMEMORY000000000000", Op: memapi.OpQuarantine, Reason: "r"}, memapi.ErrNotFound, "not found"},
		{memorytest.Agent("eve"), memapi.EditRequest{TargetID: m.ID, Op: memapi.OpQuarantine, Reason: "r"}, memapi.ErrNotFound, "not found"},
		{dave, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAttenuate, Reason: "r", Patch: memapi.EditPatch{Importance: &imp}}, acl.ErrDenied, "write"},
	} {
		_, err := Of(s).Propose(ctx, tc.c, tc.req)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %v containing %q", tc.req, err, tc.want, tc.msg)
		}
	}
	if n := auditLen(t, s); n != 0 {
		t.Fatalf("refused edits were recorded: %d", n)
	}
	r, err := Of(s).Propose(ctx, bob, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpRetract, Reason: "pii"})
	if err != nil || r.Status != memapi.StatusPending {
		t.Fatalf("pending retract: %+v %v", r, err)
	}
	if _, err := s.Get(ctx, alice, m.ID, false); err != nil {
		t.Fatalf("a pending retract took effect: %v", err)
	}
	if _, err := Of(s).Decide(ctx, bob, r.EditID, true); !errors.Is(err, acl.ErrDenied) {
		t.Fatalf("bob (no admin) approves: %v", err)
	}
	if _, err := Of(s).Decide(ctx, alice, "0123456789abcdef0123456789abcdef", true); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("unknown edit: %v", err)
	}
	if e, err := Of(s).Decide(ctx, alice, r.EditID, true); err != nil || e.Status != memapi.StatusApproved || e.Approver != "agent://alice" || e.DecidedAt == nil {
		t.Fatalf("alice approves: %+v %v", e, err)
	}
	if _, err := s.Get(ctx, bob, m.ID, true); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("approved retract: %v", err)
	}
	if _, err := Of(s).Audit(ctx, alice, memapi.AuditQuery{Status: "maybe"}); !errors.Is(err, memapi.ErrInvalid) {
		t.Fatalf("bad status: %v", err)
	}
	if _, err := s.Save(ctx, alice, memapi.SaveRequest{Type: "x", Content: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := (Approvals{"*": {"erase"}}).Validate(); err == nil {
		t.Fatal("approvals with an unknown op validate")
	}
}

// TestSubjectFiltersEveryRead: search, context and timeline filter by
// scope, subject and project (immutability: TestSubjectImmutable), and an
// amend leaves the subject alone.
func TestSubjectFiltersEveryRead(t *testing.T) {
	ctx := context.Background()
	s, _, c := openTest(t, "")
	m := memorytest.Save(t, s, c, memapi.SaveRequest{Type: "preference", Content: "likes tea", Scope: "user", SubjectType: "user", SubjectID: "u1", Project: "p"})
	memorytest.Save(t, s, c, memapi.SaveRequest{Type: "preference", Content: "likes coffee", Scope: "user", SubjectType: "user", SubjectID: "u2", Project: "p"})
	for _, req := range []memapi.UpdateRequest{{SubjectID: ptr("u2")}, {SubjectType: ptr("team")}} {
		if _, err := s.Update(ctx, c, m.ID, req); !errors.Is(err, memapi.ErrConflict) {
			t.Fatalf("subject changed: %v", err)
		}
	}
	f := memapi.Filter{SubjectType: "user", SubjectID: "u1", Scope: "user", Project: "p"}
	if r, _ := s.Search(ctx, c, memapi.SearchQuery{Query: "likes", Filter: f}); r.Total != 1 || r.Results[0].Memory.ID != m.ID {
		t.Fatalf("search by subject: %+v", r)
	}
	if cx, _ := s.Context(ctx, c, memapi.ContextQuery{Filter: f}); len(cx.Memories) != 1 || cx.Memories[0].ID != m.ID {
		t.Fatalf("context by subject: %+v", cx.Memories)
	}
	if tl, _ := s.Timeline(ctx, c, memapi.TimelineQuery{ID: m.ID, Filter: f}); len(tl.Before)+len(tl.After) != 0 {
		t.Fatalf("timeline by subject: %+v", tl)
	}
	if tl, _ := s.Timeline(ctx, c, memapi.TimelineQuery{ID: m.ID}); len(tl.Before)+len(tl.After) != 1 {
		t.Fatalf("timeline without a filter: %+v", tl)
	}
	text := "likes green tea"
	if _, err := Of(s).Propose(ctx, c, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: "precision", Patch: memapi.EditPatch{Text: &text}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, c, m.ID, false); got.Content != text || got.SubjectID != "u1" || got.SubjectType != "user" || got.Scope != "user" {
		t.Fatalf("after amend: %+v", got)
	}
}

// TestShareCopiesTheView: sharing an amended memory copies the amended
// text, never the original.
func TestShareCopiesTheView(t *testing.T) {
	ctx := context.Background()
	s, _ := openWith(t, 0, nil)
	alice := memorytest.Agent("alice")
	memorytest.Create(t, s, "alice", scenarioNS)
	m := memorytest.Save(t, s, alice, memapi.SaveRequest{Type: "decision", Content: "the password is hunter2"})
	text := "the password is in the vault"
	if _, err := Of(s).Propose(ctx, alice, memapi.EditRequest{TargetID: m.ID, Op: memapi.OpAmend, Reason: "secret", Patch: memapi.EditPatch{Text: &text}}); err != nil {
		t.Fatal(err)
	}
	sh, err := s.Share(ctx, alice, memapi.ShareRequest{ID: m.ID, Namespace: scenarioNS})
	if err != nil || sh.Memory.Content != text || strings.Contains(sh.Memory.Title, "hunter2") {
		t.Fatalf("share: %+v %v", sh, err)
	}
	rec, _ := s.Store().Record(scenarioNS, sh.Memory.ID)
	if strings.Contains(schema.Str(rec, schema.FieldContent), "hunter2") || strings.Contains(schema.Str(rec, schema.FieldTitle), "hunter2") {
		t.Fatal("the copy stores the original text")
	}
}

// A plain hard delete is a retract like any other: it lands on the audit
// log, and where retracts need approval it is refused, changing nothing.
func TestHardDeleteIsAuditedAndGated(t *testing.T) {
	ctx := context.Background()
	alice := memorytest.Agent("alice")
	s, _ := openWith(t, 1, Approvals{"agent://alice/gated": {memapi.OpRetract}})
	free, err := s.Save(ctx, alice, memapi.SaveRequest{Content: "retract me"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice, free.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, alice, free.ID, true); !errors.Is(err, memapi.ErrNotFound) {
		t.Fatalf("hard delete did not retract: %v", err)
	}
	a, err := Of(s).Audit(ctx, alice, memapi.AuditQuery{ID: free.ID})
	if err != nil || len(a.Edits) != 1 || a.Edits[0].Op != memapi.OpRetract || a.Edits[0].Status != memapi.StatusApproved {
		t.Fatalf("hard delete left no audit entry: %+v %v", a, err)
	}
	gated, err := s.Save(ctx, alice, memapi.SaveRequest{Namespace: "gated", Content: "needs approval"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice, gated.ID, true); !errors.Is(err, memapi.ErrConflict) {
		t.Fatalf("a hard delete skipped the approval rule: %v", err)
	}
	if _, err := s.Get(ctx, alice, gated.ID, false); err != nil {
		t.Fatalf("a refused hard delete changed the memory: %v", err)
	}
	if a, _ := Of(s).Audit(ctx, alice, memapi.AuditQuery{ID: gated.ID}); len(a.Edits) != 0 {
		t.Fatalf("a refused hard delete recorded an edit: %+v", a.Edits)
	}
}

package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Sharing verbs: share (copy into any namespace), promote (copy or move
// into a team or project namespace), retract (final removal), and
// auto-promotion on save.
//
// A copy is a snapshot: a new memory in the target namespace with the
// source's type, title, content, summary, tags, importance, confidence,
// files, scope, subject, project, session and channel; lineage = the
// source id; copied_from = the source's namespace (so the source's
// retract, block and quarantine follow the copy: surgery/copies.go); provenance =
// the source's plus "source:<id>", "author:<source author>" and
// "author:<caller>"; author = the caller (who holds write on the target).
// The topic key is not carried: the copy must not be overwritten by the
// target's own upserts of that topic. Its id is derived from (target,
// source id, content hash), so copying the same content of the same
// memory into the same namespace again returns the existing copy
// (Existing = true) instead of a duplicate; if that copy was retracted, a
// new id is used.
//
// A move also soft-deletes the original and saves, in the source
// namespace, a memory of type "reference" whose lineage is the promoted
// copy's id. Get of a reference returns the promoted memory with
// ResolvedFrom = the reference's id when the caller may read it, and the
// reference itself otherwise; every other verb (update, delete, search,
// timeline) sees the reference as the memory it is.

// TypeReference is the type of the memory a promotion by move leaves behind.
const TypeReference = "reference"

// resolveReference follows one reference (never a chain) for Get.
func (s *Service) resolveReference(c Caller, m Memory) Memory {
	if m.Type != TypeReference || m.Lineage == "" || m.DeletedAt != nil {
		return m
	}
	ns, rec, err := s.locateView(c, m.Lineage, false)
	if err != nil {
		return m
	}
	t, fl := s.view(ns.String(), m.Lineage, rec)
	if fl.Retracted || t.Type == TypeReference {
		return m
	}
	t.ResolvedFrom = m.ID
	return t
}

// source finds the memory to copy and checks read (by locate) and share.
func (s *Service) source(c Caller, id string) (namespace.Address, Memory, error) {
	if strings.TrimSpace(id) == "" {
		return namespace.Address{}, Memory{}, invalid("id is required")
	}
	ns, rec, err := s.locate(c, id, false)
	if err != nil {
		return ns, Memory{}, err
	}
	if err := s.check(c.Principal, ns, acl.Share); err != nil {
		return ns, Memory{}, err
	}
	// A copy is made of the effective view: amended text, never the
	// original; a quarantined memory may be shared (explicitly named), and
	// its copy is quarantined too (surgery/copies.go).
	m, fl := s.view(ns.String(), id, rec)
	if fl.Retracted {
		return ns, Memory{}, fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	return ns, m, nil
}

func (s *Service) target(c Caller, src namespace.Address, arg string) (namespace.Address, error) {
	if strings.TrimSpace(arg) == "" {
		return namespace.Address{}, invalid("namespace (the target) is required")
	}
	dst, err := s.resolveWrite(c, arg)
	if err != nil {
		return dst, err
	}
	if dst == src {
		return dst, invalid("the memory is already in %s", dst)
	}
	return dst, nil
}

// Share copies a memory into another namespace: it needs read on the
// source, share on the source namespace and write on the target.
func (s *Service) Share(ctx context.Context, c Caller, req ShareRequest) (ShareResult, error) {
	srcNS, src, err := s.source(c, req.ID)
	if err != nil {
		return ShareResult{}, err
	}
	dst, err := s.target(c, srcNS, req.Namespace)
	if err != nil {
		return ShareResult{}, err
	}
	var res ShareResult
	err = s.write(func(tx *store.Tx) error {
		var e error
		res.Memory, res.Existing, e = s.copyTx(tx, c, src, dst, nil)
		return e
	})
	return res, err
}

// Promote copies or moves a memory into a team or project namespace. Both
// need what Share needs; a move also needs write on the source namespace.
func (s *Service) Promote(ctx context.Context, c Caller, req PromoteRequest) (ShareResult, error) {
	switch req.Mode {
	case "":
		req.Mode = PromoteCopy
	case PromoteCopy, PromoteMove:
	default:
		return ShareResult{}, invalid("mode %q: want copy or move", req.Mode)
	}
	srcNS, src, err := s.source(c, req.ID)
	if err != nil {
		return ShareResult{}, err
	}
	if src.Type == TypeReference {
		return ShareResult{}, invalid("memory %s is a reference; promote the memory it points to (%s)", src.ID, src.Lineage)
	}
	dst, err := s.target(c, srcNS, req.Namespace)
	if err != nil {
		return ShareResult{}, err
	}
	if dst.Kind == namespace.KindAgent {
		return ShareResult{}, invalid("promote moves knowledge into a team:// or project:// namespace, not %s (use share to copy into an agent namespace)", dst)
	}
	if req.Mode == PromoteMove {
		if err := s.auth.CheckWrite(c.Principal, srcNS); err != nil {
			return ShareResult{}, err
		}
	}
	var res ShareResult
	err = s.write(func(tx *store.Tx) error {
		var e error
		if res.Memory, res.Existing, e = s.copyTx(tx, c, src, dst, nil); e != nil {
			return e
		}
		if req.Mode == PromoteCopy {
			return nil
		}
		if e := s.softDeleteTx(tx, srcNS, src.ID); e != nil {
			return e
		}
		ref := SaveRequest{Type: TypeReference, Title: src.Title,
			Content: fmt.Sprintf("Promoted to %s as memory %s.", dst, res.Memory.ID),
			Tags:    src.Tags, Scope: src.Scope, Project: src.Project, Importance: &src.Importance,
			Confidence: &src.Confidence, SubjectType: src.SubjectType, SubjectID: src.SubjectID}
		p, e := normaliseSave(&ref)
		if e != nil {
			return e
		}
		p.lineage, p.noUpsert = res.Memory.ID, true
		p.provenance = []string{"source:" + src.ID, "author:" + c.Principal.String()}
		saved, e := s.saveTx(tx, c, srcNS, ref, p)
		res.Reference = &saved.Memory
		return e
	})
	if err != nil {
		return ShareResult{}, err
	}
	return res, nil
}

// copyTx writes a copy of src into dst (see the comment at the top).
func (s *Service) copyTx(tx *store.Tx, c Caller, src Memory, dst namespace.Address, extraTags []string) (Memory, bool, error) {
	id := derivedID(src.CreatedAt, "copy", dst.String(), src.ID, src.ContentHash)
	cur, err := tx.Record(dst.String(), id)
	if err != nil {
		return Memory{}, false, err
	}
	if !cur.Empty() {
		m, _ := s.view(dst.String(), id, cur)
		return m, true, nil
	}
	gone, err := tx.Retracted(dst.String(), id)
	if err != nil {
		return Memory{}, false, err
	}
	if gone {
		now, _ := s.now()
		if id, err = s.newID(now); err != nil {
			return Memory{}, false, err
		}
	}
	tags := slices.Clone(src.Tags)
	for _, t := range extraTags {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	req := SaveRequest{Type: src.Type, Title: src.Title, Content: src.Content, Summary: src.Summary, Tags: tags,
		Importance: &src.Importance, Confidence: &src.Confidence, LinkedFiles: src.LinkedFiles, Scope: src.Scope,
		SubjectType: src.SubjectType, SubjectID: src.SubjectID, Project: src.Project, SessionID: src.SessionID,
		Channel: src.Channel}
	p, err := normaliseSave(&req)
	if err != nil {
		return Memory{}, false, err
	}
	p.id, p.lineage, p.noUpsert = id, src.ID, true
	prov := append(slices.Clone(src.Provenance), "source:"+src.ID, "author:"+c.Principal.String())
	if src.Author != "" {
		prov = append(prov, "author:"+src.Author)
	}
	slices.Sort(prov)
	p.provenance = slices.Compact(prov)
	res, err := s.saveTx(tx, c, dst, req, p)
	if err != nil {
		return Memory{}, false, err
	}
	return res.Memory, false, s.markCopyTx(tx, dst, &res.Memory, src.Namespace) // surgery/copies.go follows it
}

// Retract removes a memory for good, from any namespace the caller may
// write (Delete with hard = true).
func (s *Service) Retract(ctx context.Context, c Caller, id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid("id is required")
	}
	return s.Delete(ctx, c, id, true)
}

// AutoPromote configures the mirroring of eligible saves into a shared
// namespace. Off by default. A save by caller C into a namespace other
// than Namespace, of one of Types, with confidence at or above
// MinConfidence, is copied into Namespace (as Share does, tagged "shared"
// and "promoted:auto") when C may share from the source and write the
// target; otherwise nothing happens and the save is unaffected. Copies are
// idempotent by lineage and content hash: saving the same content again
// does not duplicate, while an edit that changes the content mirrors the
// new version. Only Save is mirrored (not imports, sessions or prompts).
type AutoPromote struct {
	Enabled bool `json:"enabled"`
	// Namespace is the target, a team:// or project:// root. Required
	// when Enabled.
	Namespace string `json:"namespace,omitempty"`
	// Types is the eligible memory types; default correction, decision,
	// preference.
	Types []string `json:"types,omitempty"`
	// MinConfidence is the lowest eligible confidence, 0..1; default 0.9.
	MinConfidence *float64 `json:"min_confidence,omitempty"`

	target namespace.Address
}

// DefaultAutoPromoteTypes are the types mirrored unless configured.
func DefaultAutoPromoteTypes() []string { return []string{"correction", "decision", "preference"} }

// DefaultAutoPromoteConfidence is the confidence threshold unless configured.
const DefaultAutoPromoteConfidence = 0.9

// Validate checks the configuration and fills its defaults; Open calls it.
func (a *AutoPromote) Validate() error {
	if !a.Enabled {
		return nil
	}
	ns, err := namespace.Parse(a.Namespace)
	if err != nil {
		return fmt.Errorf("%w: auto_promote.namespace: %w", ErrInvalid, err)
	}
	if ns.Kind == namespace.KindAgent {
		return invalid("auto_promote.namespace %s: want a team:// or project:// namespace", ns)
	}
	a.target = ns
	if len(a.Types) == 0 {
		a.Types = DefaultAutoPromoteTypes()
	}
	for _, t := range a.Types {
		if err := memapi.CheckType(t); err != nil {
			return fmt.Errorf("auto_promote.types: %w", err)
		}
	}
	if a.MinConfidence == nil {
		v := DefaultAutoPromoteConfidence
		a.MinConfidence = &v
	}
	if err := unit("auto_promote.min_confidence", a.MinConfidence); err != nil {
		return err
	}
	return nil
}

// Auto-promotion tags.
const (
	TagShared       = "shared"
	TagPromotedAuto = "promoted:auto"
)

// autoPromote mirrors m after a successful save (see AutoPromote). Its
// failures are logged: the save itself has succeeded.
func (s *Service) autoPromote(c Caller, m Memory) {
	ap := &s.cfg.AutoPromote
	if !ap.Enabled || !slices.Contains(ap.Types, m.Type) || m.Confidence < *ap.MinConfidence {
		return
	}
	src, err := namespace.Parse(m.Namespace)
	if err != nil || ap.target.Contains(src) {
		return
	}
	if s.check(c.Principal, src, acl.Share) != nil || s.auth.CheckWrite(c.Principal, ap.target) != nil {
		s.log.Debug("auto-promotion skipped: no permission", "principal", c.Principal, "from", src, "to", ap.target)
		return
	}
	err = s.write(func(tx *store.Tx) error {
		_, _, e := s.copyTx(tx, c, m, ap.target, []string{TagShared, TagPromotedAuto})
		return e
	})
	if err != nil {
		s.log.Warn("auto-promotion failed", "id", m.ID, "to", ap.target, "err", err)
	}
}

// markCopyTx records on the copy id in ns, just saved, the namespace of
// its source (what surgery's copies follow).
func (s *Service) markCopyTx(tx *store.Tx, ns namespace.Address, m *Memory, srcNS string) error {
	_, ts := s.now()
	e, err := tx.Edit(ns.String(), m.ID)
	if err != nil {
		return err
	}
	if err := e.Set(ts, schema.FieldCopiedFrom, []byte(srcNS)); err != nil {
		return err
	}
	tx.Commit(ns.String(), m.ID, e)
	m.CopiedFrom = srcNS
	return nil
}

package memory

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/schema"
	"github.com/mnemohq/mnemo/node/store"
)

// Access control lives here: the Service keeps an acl.Book fed from the
// signed records stored in each namespace it holds, and the default
// Authorizer asks the Policy built from it.
//
// Storage. An acl.SignedRecord (create, grant, revoke) is CRDT state of the
// namespace it governs: one crdt record with id "acl:" + rec.ID(), field
// k = "acl" and field ar = rec.Encode(). Records are written once and never
// edited or retracted (memory operations refuse "acl:" ids and
// ApplyRemote refuses deltas that would change one), so the set only
// grows and replicates with the namespace. The search index never sees
// them.
//
// Admission. Every acl record the store holds — at Open and whenever one
// is (re)indexed, local or remote — is decoded, its id and namespace
// checked against where it is stored, and run through Policy.Verify. A
// record that does not decode, is stored under the wrong id or namespace,
// or whose signature is missing or wrong is kept out of the book and
// logged. A record whose signer lacks authority right now is admitted but
// does not count (Policy decides): acl's rules make authority a property
// of the whole set, so a grant that arrives before the admin grant that
// authorises it must count once that arrives, whatever the order.
//
// Keys. acl.KeyLookup binds principals to node keys: the node's own
// principals (the owner agent, and whatever Config.IsLocal accepts) to this
// node's identity; others through Config.KeyOf (membership; default none).
// Records this node writes are signed by its identity on behalf of the
// caller, so only a local principal can create, grant or revoke here.

// PermissionChecker is an optional extension of Authorizer for the
// permissions beyond read and write (share, admin). An Authorizer without
// it is asked CheckWrite for those.
type PermissionChecker interface {
	Check(principal, ns namespace.Address, perm acl.Permission) error
}

// aclState is the Service's view of the acl records in its store.
type aclState struct {
	id      acl.Identity
	mu      sync.Mutex // guards book and dirty
	book    *acl.Book
	dirty   bool
	policy  atomic.Pointer[acl.Policy]
	writeMu sync.Mutex                                                        // serialises create, grant and revoke: check, then write
	keyOf   atomic.Pointer[func(namespace.Address) (ed25519.PublicKey, bool)] // SetKeyOf; overrides Config.KeyOf
	// sigs is shared by every path that verifies an acl record's
	// signature (the delta gate, PolicyWithDelta, admission, local
	// writes), so a record is verified once on this node, not per path.
	sigs *acl.SigCache
}

// policyAuthorizer is the default Authorizer: the Service's acl Policy.
type policyAuthorizer struct{ s *Service }

func (a policyAuthorizer) Check(p, ns namespace.Address, perm acl.Permission) error {
	if err, ok := inboxDecision(p, ns, perm); ok {
		return err
	}
	return a.s.Policy().Check(p, ns, perm)
}
func (a policyAuthorizer) CheckRead(p, ns namespace.Address) error  { return a.Check(p, ns, acl.Read) }
func (a policyAuthorizer) CheckWrite(p, ns namespace.Address) error { return a.Check(p, ns, acl.Write) }

var _ PermissionChecker = policyAuthorizer{}

// resolveIdentity returns Config.Identity, checked, or for tests and tools
// without one an identity derived from the agent name (so a reopened
// Service still verifies its own records). The node always passes its key.
func resolveIdentity(cfg Config) (acl.Identity, error) {
	id := cfg.Identity
	if id.Private == nil {
		seed := sha256.Sum256([]byte("mnemo test identity\x00" + cfg.Agent.String()))
		return acl.IdentityFromSeed(seed[:])
	}
	if len(id.Private) != ed25519.PrivateKeySize || !bytes.Equal(id.Private.Public().(ed25519.PublicKey), id.Public) {
		return acl.Identity{}, fmt.Errorf("%w: Config.Identity is not a valid key pair", ErrInvalid)
	}
	return id, nil
}

// initACL sets up the identity, the book and the default Authorizer; it
// runs before the store is scanned.
func (s *Service) initACL(id acl.Identity) error {
	s.acl.id = id
	s.acl.sigs = s.cfg.ACLSigs
	if s.acl.sigs == nil {
		s.acl.sigs = acl.NewSigCache(0)
	}
	s.acl.book = acl.NewBook(s.keyOf)
	s.acl.book.SetSigCache(s.acl.sigs)
	s.acl.book.SetEvalCache(s.cfg.ACLEvals)
	s.acl.policy.Store(s.acl.book.Policy())
	if s.auth == nil {
		s.auth = policyAuthorizer{s}
	}
	return nil
}

// Identity is the key pair this Service signs acl records with.
func (s *Service) Identity() acl.Identity { return s.acl.id }

// Policy is the current acl decision snapshot.
func (s *Service) Policy() *acl.Policy { return s.acl.policy.Load() }

// RefreshPolicy re-evaluates the book. Call it when what Config.IsLocal or
// Config.KeyOf answer has changed (a principal was added, membership
// changed); records arriving through the store refresh it by themselves.
func (s *Service) RefreshPolicy() {
	s.acl.mu.Lock()
	s.acl.dirty = false
	s.acl.book.KeysChanged()
	s.acl.policy.Store(s.acl.book.Policy())
	s.acl.mu.Unlock()
	for _, o := range s.feat.policy {
		o.PolicyChanged() // surgery: who holds admin decides which approvals count
	}
}

// refreshPolicy rebuilds the snapshot if records were added since (the
// book evaluates again only the namespaces they belong to).
func (s *Service) refreshPolicy() {
	s.acl.mu.Lock()
	if s.acl.dirty {
		s.acl.dirty = false
		s.acl.policy.Store(s.acl.book.Policy())
	}
	s.acl.mu.Unlock()
}

// keyOf is the book's acl.KeyLookup. It must be safe for concurrent use,
// and so must Config.IsLocal and Config.KeyOf.
func (s *Service) keyOf(p namespace.Address) (ed25519.PublicKey, bool) {
	if s.isLocal(p) {
		return s.acl.id.Public, true
	}
	if h := s.acl.keyOf.Load(); h != nil {
		return (*h)(p)
	}
	if s.cfg.KeyOf != nil {
		return s.cfg.KeyOf(p)
	}
	return nil, false
}

// SetKeyOf replaces Config.KeyOf (for replication, which learns other
// nodes' principals and keys from membership after the Service opened)
// and re-evaluates the policy. fn must be safe for concurrent use; nil
// restores Config.KeyOf. Call RefreshPolicy when fn's answers change.
func (s *Service) SetKeyOf(fn func(namespace.Address) (ed25519.PublicKey, bool)) {
	if fn == nil {
		s.acl.keyOf.Store(nil)
	} else {
		s.acl.keyOf.Store(&fn)
	}
	s.RefreshPolicy()
}

func (s *Service) isLocal(p namespace.Address) bool {
	return p == s.cfg.Agent || s.cfg.IsLocal != nil && s.cfg.IsLocal(p)
}

// check asks the Authorizer for any permission.
func (s *Service) check(p, ns namespace.Address, perm acl.Permission) error {
	if pc, ok := s.auth.(PermissionChecker); ok {
		return pc.Check(p, ns, perm)
	}
	if perm == acl.Read {
		return s.auth.CheckRead(p, ns)
	}
	return s.auth.CheckWrite(p, ns)
}

// decodeACL reads the signed record out of an acl entry stored as id in ns
// and checks it belongs there. Errors wrap ErrInvalid and an acl sentinel.
func decodeACL(ns, id string, rec *crdt.Record) (acl.SignedRecord, error) {
	f, ok := rec.Field(schema.FieldACL)
	if !ok {
		return acl.SignedRecord{}, fmt.Errorf("%w: acl entry %s in %s has no record", ErrInvalid, id, ns)
	}
	r, err := acl.DecodeRecord(f.Value)
	if err != nil {
		return r, fmt.Errorf("%w: acl entry %s in %s: %w", ErrInvalid, id, ns, err)
	}
	if id != schema.ACLPrefix+r.ID() {
		return r, fmt.Errorf("%w: acl entry %s in %s holds record %s", ErrInvalid, id, ns, r.ID())
	}
	if r.Namespace.String() != ns {
		return r, fmt.Errorf("%w: acl entry %s is stored in %s but governs %s", ErrInvalid, id, ns, r.Namespace)
	}
	return r, nil
}

// admitACL adds the acl record stored as id in ns to the book (see the
// comment at the top of this file). Called from index.
func (s *Service) admitACL(ns, id string, rec *crdt.Record) {
	r, err := decodeACL(ns, id, rec)
	if err != nil {
		s.log.Warn("acl record refused", "namespace", ns, "id", id, "err", err)
		return
	}
	if err := s.Policy().Verify(r); err != nil {
		if !errors.Is(err, acl.ErrNotAuthorized) {
			s.log.Warn("acl record refused", "namespace", ns, "id", id, "err", err)
			return
		}
		// Possibly authorised by a record not yet seen: admitted, and
		// counted only if the whole set says so.
		s.log.Debug("acl record does not count (yet)", "namespace", ns, "id", id, "err", err)
	}
	s.acl.mu.Lock()
	defer s.acl.mu.Unlock()
	if err := s.acl.book.AddRecord(r); err != nil {
		s.log.Warn("acl record refused", "namespace", ns, "id", id, "err", err)
		return
	}
	s.acl.dirty = true
}

// checkRemoteACL refuses a peer's delta that would retract or edit an acl
// record, or that holds one that does not decode, verify its signature or
// belong where it is stored. Whether a well-signed record counts is the
// Policy's business, not this gate's. A record this node already stores
// with the same bytes changes nothing here and is not checked again; a
// new one is verified through the Service's SigCache, so the admission
// that follows does not verify it again.
func (s *Service) checkRemoteACL(ns string, delta *crdt.Map) error {
	for _, id := range delta.RetractedIDs() {
		if strings.HasPrefix(id, schema.ACLPrefix) {
			return fmt.Errorf("%w: acl record %s in %s cannot be retracted", ErrInvalid, id, ns)
		}
	}
	var bad error
	delta.Records(func(id string, rec *crdt.Record) bool {
		isRec := strings.HasPrefix(id, schema.ACLPrefix)
		if !isRec {
			if schema.IsACL(rec) {
				bad = fmt.Errorf("%w: entry %s in %s is marked as an acl record without an acl: id", ErrInvalid, id, ns)
			}
			return bad == nil
		}
		if !schema.IsACL(rec) {
			bad = fmt.Errorf("%w: entry %s in %s is not an acl record", ErrInvalid, id, ns)
			return false
		}
		cur, err := s.st.Record(ns, id)
		if err != nil {
			bad = err
			return false
		}
		held, isHeld := cur.Field(schema.FieldACL)
		if in, ok := rec.Field(schema.FieldACL); ok && isHeld && bytes.Equal(in.Value, held.Value) {
			return true // the record stored here, byte for byte
		}
		r, err := decodeACL(ns, id, rec)
		if err == nil {
			err = s.acl.sigs.VerifySignature(r)
		}
		if err != nil {
			bad = err
			return false
		}
		if isHeld && !bytes.Equal(held.Value, r.Encode()) {
			bad = fmt.Errorf("%w: acl record %s in %s cannot be edited", ErrInvalid, id, ns)
			return false
		}
		return true
	})
	return bad
}

// writeACL stores rec in the namespace it governs.
func (s *Service) writeACL(rec acl.SignedRecord) error {
	ns := rec.Namespace.String()
	return s.write(func(tx *store.Tx) error {
		_, ts := s.now()
		e, err := tx.Edit(ns, schema.ACLPrefix+rec.ID())
		if err != nil {
			return err
		}
		if err := e.Set(ts, schema.FieldKind, []byte(schema.KindACL)); err != nil {
			return err
		}
		if err := e.Set(ts, schema.FieldACL, rec.Encode()); err != nil {
			return err
		}
		tx.Commit(ns, schema.ACLPrefix+rec.ID(), e)
		return nil
	})
}

func toACLRecord(r acl.SignedRecord) ACLRecord {
	out := ACLRecord{ID: r.ID(), Kind: r.Kind.String(), Namespace: r.Namespace.String(), Signer: r.Signer.String(),
		SignerNode: string(acl.NodeIDOf(r.SignerKey)), After: r.After, At: r.TS.Time()}
	if !r.Principal.IsZero() {
		out.Principal = r.Principal.String()
	}
	for _, p := range r.Perms {
		out.Permissions = append(out.Permissions, p.String())
	}
	return out
}

func permStrings(perms []acl.Permission) []string {
	out := make([]string, 0, len(perms))
	for _, p := range perms {
		out = append(out, p.String())
	}
	return out
}

// rootNamespace parses a namespace argument that acl records may name: a
// full root address (no path; sub-paths inherit their root's permissions).
func (s *Service) rootNamespace(c Caller, arg string) (namespace.Address, error) {
	if strings.TrimSpace(arg) == "" {
		return namespace.Address{}, invalid("namespace is required")
	}
	ns, err := s.resolve(c, arg)
	if err != nil {
		return ns, err
	}
	if ns.Path != "" {
		return ns, invalid("namespace %s has a path: permissions are set on the root namespace %s, and every path below it inherits them", ns, ns.Root())
	}
	return ns, nil
}

// signer checks that c can sign acl records here: only this node's own
// principals are bound to its key.
func (s *Service) signer(c Caller) error {
	if !s.isLocal(c.Principal) {
		return fmt.Errorf("%w: %s is not a principal of this node, so this node cannot sign for it", acl.ErrDenied, c.Principal)
	}
	return nil
}

// CreateNamespace creates a team or project namespace with c as its
// creator, who holds every permission. An existing namespace is
// ErrConflict; an agent namespace or a path is ErrInvalid (agent
// namespaces exist implicitly and belong to their agent).
func (s *Service) CreateNamespace(ctx context.Context, c Caller, arg string) (NamespaceInfo, error) {
	ns, err := s.rootNamespace(c, arg)
	if err != nil {
		return NamespaceInfo{}, err
	}
	if ns.Kind == namespace.KindAgent {
		return NamespaceInfo{}, invalid("%s is an agent namespace: it exists without being created and belongs to its agent; create team:// or project:// namespaces", ns)
	}
	if err := s.signer(c); err != nil {
		return NamespaceInfo{}, err
	}
	s.acl.writeMu.Lock()
	defer s.acl.writeMu.Unlock()
	if root, _, ok := s.Policy().Root(ns); ok {
		return NamespaceInfo{}, fmt.Errorf("%w: namespace %s already exists (created by %s)", ErrConflict, ns, root)
	}
	_, ts := s.now()
	rec, err := acl.NewCreate(s.acl.id, c.Principal, ns, ts)
	if err != nil {
		return NamespaceInfo{}, err
	}
	if err := s.Policy().Verify(rec); err != nil {
		return NamespaceInfo{}, fmt.Errorf("%w: %v", ErrConflict, err)
	}
	if err := s.writeACL(rec); err != nil {
		return NamespaceInfo{}, err
	}
	return s.namespaceInfo(c, ns), nil
}

func (s *Service) namespaceInfo(c Caller, ns namespace.Address) NamespaceInfo {
	pol := s.Policy()
	info := NamespaceInfo{Namespace: ns.String(), Kind: ns.Kind.String(), Permissions: permStrings(pol.Permissions(c.Principal, ns))}
	if root, src, ok := pol.Root(ns); ok {
		info.Root, info.RootSource = root.String(), src.String()
	}
	return info
}

// Namespaces lists the root namespaces this node holds (and the caller's
// own) on which the caller holds any permission, sorted.
func (s *Service) Namespaces(ctx context.Context, c Caller) ([]NamespaceInfo, error) {
	if c.Principal.IsZero() {
		return nil, invalid("no caller principal")
	}
	roots := map[namespace.Address]bool{c.Principal: true}
	for _, name := range s.st.Namespaces() {
		if ns, err := namespace.Parse(name); err == nil {
			roots[ns.Root()] = true
		}
	}
	out := []NamespaceInfo{}
	for ns := range roots {
		if info := s.namespaceInfo(c, ns); len(info.Permissions) > 0 {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b NamespaceInfo) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out, nil
}

func (s *Service) parseGrant(c Caller, req GrantRequest) (ns, principal namespace.Address, perms []acl.Permission, err error) {
	if ns, err = s.rootNamespace(c, req.Namespace); err != nil {
		return
	}
	if strings.TrimSpace(req.Principal) == "" {
		err = invalid("principal is required (agent://NAME)")
		return
	}
	if principal, err = namespace.ParsePrincipal(req.Principal); err != nil {
		err = fmt.Errorf("%w: principal: %w", ErrInvalid, err)
		return
	}
	if len(req.Permissions) == 0 {
		err = invalid("permissions are required (read, write, share, admin; member = read,write; all)")
		return
	}
	if perms, err = acl.ParsePermissions(strings.Join(req.Permissions, ",")); err != nil {
		err = fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return
}

// Grant grants permissions on a root namespace. The caller needs admin on
// it and must be a principal of this node. The grant lists, as its after
// set, every revocation of the same permissions the node knows, so a
// re-grant outweighs earlier revocations (but not concurrent ones).
func (s *Service) Grant(ctx context.Context, c Caller, req GrantRequest) (GrantResult, error) {
	ns, principal, perms, err := s.parseGrant(c, req)
	if err != nil {
		return GrantResult{}, err
	}
	if err := s.check(c.Principal, ns, acl.Admin); err != nil {
		return GrantResult{}, err
	}
	if err := s.signer(c); err != nil {
		return GrantResult{}, err
	}
	s.acl.writeMu.Lock()
	defer s.acl.writeMu.Unlock()
	s.acl.mu.Lock()
	after := s.acl.book.Revocations(ns, principal, perms)
	s.acl.mu.Unlock()
	_, ts := s.now()
	rec, err := acl.NewGrant(s.acl.id, c.Principal, ns, principal, perms, after, ts)
	if err != nil {
		return GrantResult{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s.admitLocal(rec, principal)
}

// Revoke revokes permissions on a root namespace from a principal; it
// wins over every grant that does not list it. The namespace's owner or
// creator cannot be revoked (ErrInvalid).
func (s *Service) Revoke(ctx context.Context, c Caller, req GrantRequest) (GrantResult, error) {
	ns, principal, perms, err := s.parseGrant(c, req)
	if err != nil {
		return GrantResult{}, err
	}
	if err := s.check(c.Principal, ns, acl.Admin); err != nil {
		return GrantResult{}, err
	}
	if err := s.signer(c); err != nil {
		return GrantResult{}, err
	}
	if root, _, ok := s.Policy().Root(ns); ok && root == principal {
		return GrantResult{}, invalid("%s is the %s's root authority (its owner or creator) and cannot be revoked", principal, ns)
	}
	s.acl.writeMu.Lock()
	defer s.acl.writeMu.Unlock()
	_, ts := s.now()
	rec, err := acl.NewRevoke(s.acl.id, c.Principal, ns, principal, perms, ts)
	if err != nil {
		return GrantResult{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s.admitLocal(rec, principal)
}

// admitLocal verifies a record this node made and stores it.
func (s *Service) admitLocal(rec acl.SignedRecord, principal namespace.Address) (GrantResult, error) {
	if err := s.Policy().Verify(rec); err != nil {
		if errors.Is(err, acl.ErrNotAuthorized) {
			return GrantResult{}, fmt.Errorf("%w: %v", acl.ErrDenied, err)
		}
		return GrantResult{}, err
	}
	if err := s.writeACL(rec); err != nil {
		return GrantResult{}, err
	}
	return GrantResult{Record: toACLRecord(rec), Permissions: permStrings(s.Policy().Permissions(principal, rec.Namespace))}, nil
}

// ACL lists the effective permissions on a namespace (its root's), with
// who signed them. The caller needs read on it; admins also see the
// records that do not count and why.
func (s *Service) ACL(ctx context.Context, c Caller, arg string) (ACLView, error) {
	if strings.TrimSpace(arg) == "" {
		return ACLView{}, invalid("namespace is required")
	}
	ns, err := s.resolve(c, arg)
	if err != nil {
		return ACLView{}, err
	}
	ns = ns.Root()
	if err := s.check(c.Principal, ns, acl.Read); err != nil {
		return ACLView{}, err
	}
	pol := s.Policy()
	v := ACLView{Namespace: ns.String(), Entries: []ACLEntry{}}
	if root, _, ok := pol.Root(ns); ok {
		v.Root = root.String()
	}
	switch ns.Kind {
	case namespace.KindAgent:
		v.Defaults = "the owning agent holds every permission; nobody else holds any without a grant"
	case namespace.KindTeam:
		v.Defaults = "the creator holds every permission; members need a grant"
	case namespace.KindProject:
		v.Defaults = "the creator holds every permission; every principal of the cluster reads; writing needs a grant"
	}
	if v.Root == "" {
		v.Defaults = "not created: nobody administers it, so no grant counts"
	}
	for _, e := range pol.Effective(ns) {
		ae := ACLEntry{Principal: e.Principal.String(), Permission: e.Perm.String(), Source: e.Source.String(),
			Signer: e.Signer.String(), RecordID: e.RecordID}
		if e.TS != 0 {
			t := e.TS.Time()
			ae.At = &t
		}
		v.Entries = append(v.Entries, ae)
	}
	if pol.Allowed(c.Principal, ns, acl.Admin) {
		for _, r := range pol.Rejected(ns) {
			v.Rejected = append(v.Rejected, ACLRejection{Record: toACLRecord(r.Record), Reason: r.Err.Error()})
		}
	}
	return v, nil
}

package acl

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/mnemohq/mnemo/namespace"
)

// Policy answers every permission question. It is an immutable snapshot of a
// Book (rebuild it with Book.Policy after adding records) and is safe for
// concurrent use if the Book's KeyLookup is.
type Policy struct {
	keyOf KeyLookup
	sigs  *SigCache // the Book's; nil: verify every time
	ns    roots
}

// roots holds the evaluated states of root namespaces, a map per kind
// keyed by name: Allowed reads it on every decision, and a map keyed by
// an Address (hashed and compared as a struct of two strings) was most
// of Allowed's time. Only canonical roots (kind 1 to 3, no path) are ever
// stored or found.
type roots [namespace.KindProject + 1]map[string]*nsState

func (r *roots) get(root namespace.Address) (*nsState, bool) {
	if root.Kind == 0 || int(root.Kind) >= len(r) || root.Path != "" {
		return nil, false
	}
	st, ok := r[root.Kind][root.Name]
	return st, ok
}

// sized makes r's maps for the roots of recs, each at its size: a
// Policy is built whole, and maps grown one insert at a time cost more.
func (r *roots) sized(recs map[namespace.Address]map[string]*SignedRecord) {
	var n [len(roots{})]int
	for root := range recs {
		if int(root.Kind) < len(n) {
			n[root.Kind]++
		}
	}
	for k, c := range n {
		if c > 0 {
			r[k] = make(map[string]*nsState, c)
		}
	}
}

func (r *roots) set(root namespace.Address, st *nsState) {
	if r[root.Kind] == nil {
		r[root.Kind] = make(map[string]*nsState)
	}
	r[root.Kind][root.Name] = st
}

func (p *Policy) lookup(principal namespace.Address) ([]byte, bool) {
	if p.keyOf == nil {
		return nil, false
	}
	return p.keyOf(principal)
}

func (p *Policy) state(ns namespace.Address) *nsState {
	root := ns.Root()
	if st, ok := p.ns.get(root); ok {
		return st
	}
	return defaultState(root)
}

// Unchanged reports whether p answers every question about ns as since
// does: both snapshots hold the same evaluation of ns's root (Book.Policy
// evaluates again only the roots whose records changed, and every root
// after KeysChanged). A nil since has changed.
func (p *Policy) Unchanged(since *Policy, ns namespace.Address) bool {
	if since == nil {
		return false
	}
	root := ns.Root()
	a, inP := p.ns.get(root)
	b, inSince := since.ns.get(root)
	return inP == inSince && a == b
}

// Allowed reports whether principal (an agent root) may exercise perm on ns
// or, through inheritance from its root, on any path below it. It is the one
// decision every path takes; see the package documentation for the rules.
// Anything malformed is denied.
func (p *Policy) Allowed(principal, ns namespace.Address, perm Permission) bool {
	if principal.Kind != namespace.KindAgent || principal.Path != "" || principal.IsZero() || ns.IsZero() || !perm.valid() {
		return false
	}
	root := ns.Root()
	st, evaluated := p.ns.get(root)
	var ps permSet
	held := false
	if evaluated {
		ps, held = st.perms[principal.Name]
	}
	// A holder in an evaluated state is a canonical principal (every
	// record's signer and principal is checked when it is admitted, and an
	// owner is that of a record's canonical namespace), so only anyone
	// else costs the check of canonical form (a String and a Parse, which
	// was a third of this function on every read check).
	if !held && !canonical(principal) {
		return false
	}
	if !evaluated {
		if owner, ok := root.Owner(); ok && owner == principal {
			ps = allPerms
		}
	}
	if ps.has(perm) {
		return true
	}
	if ns.Kind == namespace.KindProject && perm == Read {
		_, member := p.lookup(principal)
		return member
	}
	return false
}

// Check is Allowed as an error: nil, or an error wrapping ErrDenied that
// names the principal, the permission and the namespace, such as
// "acl: permission denied: agent://bob lacks read on agent://alice".
func (p *Policy) Check(principal, ns namespace.Address, perm Permission) error {
	if p.Allowed(principal, ns, perm) {
		return nil
	}
	return fmt.Errorf("%w: %s lacks %s on %s", ErrDenied, show(principal), perm, show(ns))
}

func show(a namespace.Address) string {
	if a.IsZero() {
		return "(none)"
	}
	return a.String()
}

// Permissions lists what principal may do on ns, in canonical order.
func (p *Policy) Permissions(principal, ns namespace.Address) []Permission {
	var out []Permission
	for _, perm := range AllPermissions() {
		if p.Allowed(principal, ns, perm) {
			out = append(out, perm)
		}
	}
	return out
}

// Readable returns the candidates principal may read, in their order: the
// filter for search results and replica sets.
func (p *Policy) Readable(principal namespace.Address, candidates []namespace.Address) []namespace.Address {
	var out []namespace.Address
	for _, ns := range candidates {
		if p.Allowed(principal, ns, Read) {
			out = append(out, ns)
		}
	}
	return out
}

// Root returns the root authority of ns: the owning agent of an agent
// namespace (source SourceOwner) or the creator of a team or project
// namespace (SourceCreator). ok is false for a namespace never created.
func (p *Policy) Root(ns namespace.Address) (principal namespace.Address, src Source, ok bool) {
	st := p.state(ns)
	return st.root, st.rootKind, st.hasRoot
}

// Effective lists the effective permissions on ns's root namespace: the
// root's (every permission) and those of each effective grant, with who
// signed them and when, sorted by principal, permission, source, time and
// record id. Defaults that hold without a record (any cluster principal
// reading a project) are not listed; admin implies every permission
// whether or not it is listed.
func (p *Policy) Effective(ns namespace.Address) []Entry {
	return slices.Clone(p.state(ns).entries)
}

// Rejected lists the records of ns's root namespace that are in the book
// but do not count, sorted by id. Revoked grants are not rejected: they
// were authorised, and are simply outweighed.
func (p *Policy) Rejected(ns namespace.Address) []Rejection {
	st := p.state(ns)
	out := make([]Rejection, 0, len(st.rejected))
	for _, id := range sortedKeys(st.rejected) {
		out = append(out, st.rejected[id])
	}
	return out
}

// Verify reports whether r counts, or would count if added to the book:
// its signature verifies (else ErrBadSignature), its signer is bound to its
// key (else ErrWrongKey), and its signer holds the authority it needs (else
// ErrNotAuthorized): admin for a grant, revoking power for a revocation,
// and for a creation that the namespace is not yet created (or that r is
// the creation that won). The node calls it to admit a record before
// adding it to the namespace's set.
func (p *Policy) Verify(r SignedRecord) error {
	if err := p.sigs.VerifySignature(r); err != nil {
		return err
	}
	id := r.ID()
	st := p.state(r.Namespace)
	if st.counted[id] {
		return nil
	}
	if rej, ok := st.rejected[id]; ok {
		return rej.Err
	}
	key, ok := p.lookup(r.Signer)
	switch {
	case !ok:
		return errorf(ErrWrongKey, r, id, "no key is known for %s", r.Signer)
	case !bytes.Equal(key, r.SignerKey):
		return errorf(ErrWrongKey, r, id, "%s is bound to node %s, the record to node %s", r.Signer, NodeIDOf(key), NodeIDOf(r.SignerKey))
	}
	switch r.Kind {
	case KindCreate:
		if st.hasRoot {
			return errorf(ErrNotAuthorized, r, id, "%s was already created by %s", r.Namespace, st.root)
		}
	case KindGrant:
		if !st.grantors[r.Signer] {
			return errorf(ErrNotAuthorized, r, id, "%s does not hold admin on %s", r.Signer, r.Namespace)
		}
	case KindRevoke:
		if !st.revokers[r.Signer] {
			return errorf(ErrNotAuthorized, r, id, "%s does not hold admin on %s", r.Signer, r.Namespace)
		}
	}
	return nil
}

package acl

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/mnemohq/mnemo/crdt"
	"github.com/mnemohq/mnemo/namespace"
)

// Source says where an Entry's permission comes from.
type Source uint8

// The sources of a permission.
const (
	SourceOwner   Source = iota + 1 // the agent owns its agent namespace
	SourceCreator                   // the signer of the namespace's creation record
	SourceGrant                     // an effective grant
)

// String returns "owner", "creator" or "grant".
func (s Source) String() string {
	switch s {
	case SourceOwner:
		return "owner"
	case SourceCreator:
		return "creator"
	case SourceGrant:
		return "grant"
	}
	return "unknown"
}

// Entry is one effective permission of one principal on a namespace, and
// where it comes from. A principal holding several effective grants of the
// same permission has one Entry per grant.
type Entry struct {
	Principal namespace.Address
	Perm      Permission
	Source    Source
	RecordID  string            // the grant or creation record; "" for SourceOwner
	Signer    namespace.Address // who signed it (the owner itself for SourceOwner)
	TS        crdt.Timestamp    // the record's timestamp; 0 for SourceOwner
}

// Rejection is a record that is in the book but does not count.
type Rejection struct {
	ID     string
	Record SignedRecord
	Err    error // wraps ErrNotAuthorized (and ErrWrongKey where the key is wrong)
}

type permSet uint8

func (s permSet) has(p Permission) bool { return s&(1<<p) != 0 }
func (s *permSet) add(p Permission)     { *s |= 1 << p }

const allPerms permSet = 1<<Read | 1<<Write | 1<<Share | 1<<Admin

// nsState is the evaluated state of one root namespace.
type nsState struct {
	ns       namespace.Address
	root     namespace.Address // owner or creator; zero when there is none
	rootKind Source
	create   SignedRecord // the winning creation record, if root came from one
	hasRoot  bool
	grantors map[namespace.Address]bool // A: may grant (root and effective admins)
	revokers map[namespace.Address]bool // A+: may revoke
	perms    map[string]permSet         // by agent name: every holder is an agent root (checked when a record is admitted)
	entries  []Entry
	counted  map[string]bool // records that count (grants also when revoked)
	rejected map[string]Rejection
}

// defaultState is the state of a namespace with no records.
func defaultState(ns namespace.Address) *nsState {
	st := &nsState{
		ns:       ns,
		grantors: map[namespace.Address]bool{},
		revokers: map[namespace.Address]bool{},
		perms:    map[string]permSet{},
		counted:  map[string]bool{},
		rejected: map[string]Rejection{},
	}
	if owner, ok := ns.Owner(); ok {
		st.setRoot(owner, SourceOwner, SignedRecord{}, "")
	}
	return st
}

func (st *nsState) setRoot(p namespace.Address, src Source, create SignedRecord, id string) {
	st.root, st.rootKind, st.hasRoot, st.create = p, src, true, create
	st.grantors[p] = true
	st.revokers[p] = true
	st.perms[p.Name] = allPerms
	for _, perm := range AllPermissions() {
		e := Entry{Principal: p, Perm: perm, Source: src, Signer: p}
		if src == SourceCreator {
			e.RecordID, e.TS = id, create.TS
		}
		st.entries = append(st.entries, e)
	}
}

// revIndex maps (principal, permission) to the ids of the revocations in a set.
type revKey struct {
	principal namespace.Address
	perm      Permission
}

type revIndex map[revKey][]string

func indexRevocations(revs []SignedRecord, ids []string) revIndex {
	idx := revIndex{}
	for i, r := range revs {
		for _, p := range r.Perms {
			k := revKey{r.Principal, p}
			idx[k] = append(idx[k], ids[i])
		}
	}
	return idx
}

// effective reports whether grant g (with sorted After) outweighs every
// revocation of perm in idx: it must list them all.
func (idx revIndex) effective(g SignedRecord, perm Permission) bool {
	for _, id := range idx[revKey{g.Principal, perm}] {
		if _, found := slices.BinarySearch(g.After, id); !found {
			return false
		}
	}
	return true
}

// evaluate decides which of recs (one root namespace's records, sorted by
// id) count. See the package documentation for the rules.
func evaluate(ns namespace.Address, recs []SignedRecord, ids []string, keyOf KeyLookup) *nsState {
	st := defaultState(ns)
	reject := func(r SignedRecord, id string, err error) {
		st.rejected[id] = Rejection{ID: id, Record: r, Err: err}
	}

	// 1. Key binding: a record counts only if its signer is bound to its key.
	var creates, grants, revokes []SignedRecord
	var createIDs, grantIDs, revokeIDs []string
	for i, r := range recs {
		id := ids[i]
		key, ok := keyOf(r.Signer)
		switch {
		case !ok:
			reject(r, id, errorf(ErrWrongKey, r, id, "no key is known for %s", r.Signer))
			continue
		case !bytes.Equal(key, r.SignerKey):
			reject(r, id, errorf(ErrWrongKey, r, id, "%s is bound to node %s, the record to node %s", r.Signer, NodeIDOf(key), NodeIDOf(r.SignerKey)))
			continue
		}
		switch r.Kind {
		case KindCreate:
			creates, createIDs = append(creates, r), append(createIDs, id)
		case KindGrant:
			grants, grantIDs = append(grants, r), append(grantIDs, id)
		case KindRevoke:
			revokes, revokeIDs = append(revokes, r), append(revokeIDs, id)
		}
	}

	// 2. Root: the owner of an agent namespace, else the earliest creation.
	if len(creates) > 0 {
		win := 0
		for i := range creates {
			if c := cmp.Compare(creates[i].TS, creates[win].TS); c < 0 || c == 0 && createIDs[i] < createIDs[win] {
				win = i
			}
		}
		st.setRoot(creates[win].Signer, SourceCreator, creates[win], createIDs[win])
		st.counted[createIDs[win]] = true
		for i, c := range creates {
			if i != win {
				reject(c, createIDs[i], errorf(ErrNotAuthorized, c, createIDs[i], "%s was created first by %s (%s)", ns, st.root, short(createIDs[win])))
			}
		}
	}
	if !st.hasRoot {
		for i, r := range grants {
			reject(r, grantIDs[i], errorf(ErrNotAuthorized, r, grantIDs[i], "%s has no creation record, so nobody administers it", ns))
		}
		for i, r := range revokes {
			reject(r, revokeIDs[i], errorf(ErrNotAuthorized, r, revokeIDs[i], "%s has no creation record, so nobody administers it", ns))
		}
		return st
	}

	// 3. Revokers (A+): admins reachable from the root through admin grants
	// that no revocation by the root outweighs. Revocations count if signed
	// by a revoker.
	var rootRevs []SignedRecord
	var rootRevIDs []string
	for i, r := range revokes {
		if r.Signer == st.root {
			rootRevs, rootRevIDs = append(rootRevs, r), append(rootRevIDs, revokeIDs[i])
		}
	}
	st.revokers = closure(st.root, grants, indexRevocations(rootRevs, rootRevIDs))
	var counted []SignedRecord
	var countedIDs []string
	for i, r := range revokes {
		if st.revokers[r.Signer] {
			counted, countedIDs = append(counted, r), append(countedIDs, revokeIDs[i])
			st.counted[revokeIDs[i]] = true
		} else {
			reject(r, revokeIDs[i], errorf(ErrNotAuthorized, r, revokeIDs[i], "%s does not hold admin on %s", r.Signer, ns))
		}
	}

	// 4. Grantors (A): admins reachable from the root through admin grants
	// that no counted revocation outweighs. Grants count if signed by one.
	idx := indexRevocations(counted, countedIDs)
	st.grantors = closure(st.root, grants, idx)
	for i, g := range grants {
		if !st.grantors[g.Signer] {
			reject(g, grantIDs[i], errorf(ErrNotAuthorized, g, grantIDs[i], "%s does not hold admin on %s", g.Signer, ns))
			continue
		}
		st.counted[grantIDs[i]] = true
		for _, perm := range g.Perms {
			if !idx.effective(g, perm) {
				continue
			}
			ps := st.perms[g.Principal.Name]
			ps.add(perm)
			if perm == Admin {
				ps = allPerms
			}
			st.perms[g.Principal.Name] = ps
			st.entries = append(st.entries, Entry{
				Principal: g.Principal, Perm: perm, Source: SourceGrant,
				RecordID: grantIDs[i], Signer: g.Signer, TS: g.TS,
			})
		}
	}
	sortEntries(st.entries)
	return st
}

// sortEntries sorts entries by compareEntries, rendering each principal
// once rather than twice per comparison (most of an evaluation's time).
func sortEntries(entries []Entry) {
	keyed := make([]keyedEntry, len(entries))
	for i, e := range entries {
		keyed[i] = keyedEntry{e.Principal.String(), e}
	}
	slices.SortFunc(keyed, func(a, b keyedEntry) int {
		if c := cmp.Compare(a.principal, b.principal); c != 0 {
			return c
		}
		return compareEntries(a.e, b.e)
	})
	for i := range keyed {
		entries[i] = keyed[i].e
	}
}

type keyedEntry struct {
	principal string
	e         Entry
}

// closure returns the root and every principal reachable from it through
// admin grants signed by a member and not outweighed by a revocation in idx.
// It is a least fixpoint grown from the root, so admin grants that only
// support each other in a cycle never enter.
func closure(root namespace.Address, grants []SignedRecord, idx revIndex) map[namespace.Address]bool {
	in := map[namespace.Address]bool{root: true}
	for changed := true; changed; {
		changed = false
		for _, g := range grants {
			if in[g.Signer] && !in[g.Principal] && slices.Contains(g.Perms, Admin) && idx.effective(g, Admin) {
				in[g.Principal] = true
				changed = true
			}
		}
	}
	return in
}

func compareEntries(a, b Entry) int {
	if a.Principal != b.Principal {
		if c := cmp.Compare(a.Principal.String(), b.Principal.String()); c != 0 {
			return c
		}
	}
	return cmp.Or(
		cmp.Compare(a.Perm, b.Perm),
		cmp.Compare(a.Source, b.Source),
		cmp.Compare(a.TS, b.TS),
		cmp.Compare(a.RecordID, b.RecordID),
	)
}

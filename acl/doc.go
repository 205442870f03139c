// Package acl decides who may do what to which namespace: node identities
// (ed25519), permissions, signed creation, grant and revocation records, and
// the Policy every read, write, share and admin path asks.
//
// # Use
//
// The node feeds a Book with the elements of each namespace's record set (a
// crdt.GSet whose elements are encoded SignedRecords, so the log is
// append-only by construction) and a KeyLookup that binds principals to node
// keys (membership and local configuration). Book.Policy evaluates the
// records into an immutable Policy (again only for the namespaces whose
// records changed since; Book.KeysChanged when the bindings did); Allowed (or Check, which returns an error
// wrapping ErrDenied) is the one decision, Readable filters search results,
// Effective lists who holds what for `mnemo acl NAMESPACE`. New records are
// made with NewCreate, NewGrant and NewRevoke, admitted with Policy.Verify,
// and added to the namespace's set as string(rec.Encode()).
//
// The package is pure: no I/O, no goroutines, no clock. Timestamps are
// arguments and are shown, never used to decide; the node writes the key
// file (mode 0600) that Identity.EncodePrivate formats.
//
// # Identities
//
// A node's id is the lowercase hex of the first 16 bytes of sha256(public
// key); its CRDT replica id the first 8 bytes, big-endian (zero maps to 1).
// Its agents are principals bound to its key: a record signed "by
// agent://alice" counts only if the KeyLookup binds agent://alice to the
// record's key (else ErrWrongKey, which wraps ErrNotAuthorized).
//
// # Bindings: which node hosts an agent
//
// A KeyLookup must come from verified records, not from what members
// advertise. A Binding binds a principal to the node key that hosts it: a
// claim is signed by that key; a hand-over, signed by the current host,
// moves the agent to another key. A Directory admits bindings: the first
// claim it admits for a principal stands (the node stores its directory, so
// this holds across restarts), a claim by another key is refused with
// ErrHostedElsewhere and changes nothing — nobody's grants change because a
// member claims a name — and only a hand-over from the current host, newer
// than the binding it replaces, moves it. Directory.KeyOf is a KeyLookup;
// Hosted answers for the whole history (writes made before a hand-over stay
// their author's). Two claims racing across a partition are decided per
// node by arrival order; the loser is reported as a conflict on every node
// that admitted the other, and an operator resolves it with a hand-over.
//
// # Defaults
//
//   - agent://NAME and every path below it belong to agent://NAME, who holds
//     every permission; nobody else holds any unless the owner grants it.
//   - A team or project namespace is governed by its creation record: the
//     signer of the creation that sorts first by (timestamp, id) is its
//     creator and holds every permission. Without a creation record nobody
//     administers it, so no grant counts. Policy.Verify refuses a creation
//     for a namespace that already has a creator, which is how a node keeps
//     a back-dated creation out of its set; creations racing across a
//     partition resolve to the earliest.
//   - Every principal the KeyLookup knows (the cluster's) reads every
//     project namespace; writing one needs a grant.
//   - Admin implies read, write and share. A "member" grant is read+write.
//   - Records name a root namespace; a path below it inherits the root's
//     permissions (a grant on team://backend covers team://backend/x).
//     Narrower views are the business of projections.
//
// # Grants and revocations
//
// A grant carries, in After, the ids of the revocations of the same
// (namespace, principal, permission) its signer had seen (Book.Revocations
// gives them). A grant counts for a permission iff every counted revocation
// of that (namespace, principal, permission) is listed in its After: the
// grant causally follows them. So a revocation concurrent with a grant wins
// (the conservative outcome: access granted in ignorance of a revocation
// does not undo it), and re-granting after a revocation works because the
// new grant lists it. No timestamps are compared, so a skewed or lying
// clock cannot reorder the two. A revocation cannot touch the root.
//
// Authority is evaluated over the whole record set, as a least fixpoint
// grown from the root (owner or creator):
//
//  1. Revokers: the root, plus everyone reachable from it through admin
//     grants that no revocation signed by the root outweighs. A revocation
//     counts iff its signer is a revoker.
//  2. Grantors (admins): the root, plus everyone reachable from it through
//     admin grants, signed by a grantor, that no counted revocation
//     outweighs. A grant counts iff its signer is a grantor now.
//
// Consequences, chosen on purpose:
//   - Cascade: when an admin's admin is revoked, every grant it signed stops
//     counting (re-signing by a current admin restores them). The records
//     stay in the set, so this is just a different evaluation of the same
//     set, and reversible if the admin is re-granted.
//   - Cycles: admin grants that support only each other (bob grants carol,
//     carol grants bob, neither reached from the root) never count, since
//     the fixpoint grows only from the root.
//   - A revocation by an admin whose own admin was revoked by a delegated
//     admin still counts (it may well be concurrent with its revocation;
//     revocation wins when in doubt); one whose admin was revoked by the
//     root no longer does, which gives the root a way to silence a
//     compromised admin. Two admins revoking each other concurrently both
//     lose admin.
//   - A grant signed before its signer got admin counts once the admin
//     grant arrives: authority is a property of the set, not of time.
//
// Every replica holding the same set of records (and the same key
// bindings) decides the same, whatever the order they arrived in.
//
// # Records and errors
//
// A record encodes canonically as a msgpack array (see SignedRecord.Encode)
// of at most MaxRecordBytes (128 KiB), with at most MaxAfter (1024) ids in
// After; its ID is the hex sha256 of the domain-separated body it signs.
// DecodeRecord accepts only canonical encodings (every accepted input
// re-encodes to the same bytes), never panics, and wraps ErrCorrupt.
// Book.Add rejects an undecodable record (ErrCorrupt) or one whose
// signature is missing or wrong (ErrBadSignature); records whose signer is
// unbound, bound to another key (ErrWrongKey) or not authorised
// (ErrNotAuthorized) are kept, since authority may arrive later, but never
// count: Policy.Rejected lists them with their errors.
//
// A node meets one record on several paths (a peer's delta is checked on
// arrival, counted in the policy for that delta, then admitted to the
// book); a SigCache given to the Book (Book.SetSigCache) makes all of
// them share one ed25519 verification per record.
//
// Books that share a SigCache also share the records they hold: the
// cache keeps one immutable copy of each record a Book adds through it,
// and each Book keeps that pointer (the simulator's nodes, each of which
// holds every grant of the namespaces it reads: one copy each was N²
// records). Likewise directories that share a BindingTable
// (Directory.SetTable) keep one copy of each binding. A Book's and a
// Directory's records are never modified once held, so sharing changes
// no answer.
//
// Allowed is asked for every send and every received dot (tens of
// millions of times in a 100-node simulation), so a Policy keys its root
// states by kind and name and each state's permissions by agent name:
// strings, not namespace.Address values (a struct of two strings, hashed
// and compared as such, was two thirds of Allowed). Only canonical roots
// and agent principals are ever stored, which records are checked to name
// when they are admitted, so the keys are exact.
package acl

// Package crdt holds mnemo's conflict-free replicated data types: the hybrid
// logical clock, dots and causal contexts, the add-wins OR-Set without
// tombstones, the LWW register, the OR-Map of memory records, the grow-only
// set, their delta-mutators, joins, digests and the canonical msgpack codec.
//
// The package is pure: no I/O, no goroutines, no clock reads. Time enters as
// an argument (Clock.Now takes the wall time) and every mutation returns the
// delta it produced, so the node persists and ships deltas and the simulator
// drives the very same code.
//
// # Model
//
// A namespace is a Map: memory id → Record, with one causal Context for the
// whole namespace. Every write is tagged with a Dot (replica id, counter).
// A Record has scalar fields, each a last-writer-wins register ordered by
// (HLC timestamp, replica id, counter, value bytes), and named sets of string
// elements with add-wins semantics. A dot that the other side's context has
// seen but its store no longer holds was overwritten or removed there; a dot
// the other side has never seen survives. This is the optimized ("tombstone
// free") OR-Set: metadata is one dot per live element or field plus the
// context. A context keeps each replica's dots as sorted intervals: a version
// vector when nothing is missing, one interval per gap otherwise, however
// scattered the losses were.
//
// Retract is final: a grow-only set of retracted ids dominates every
// concurrent or later update of that id, and the record's content is dropped.
// Mutations of a retracted id are refused with ErrRetracted; deltas that still
// carry one are absorbed (their dots join the context) and their content is
// discarded.
//
// Decisions recorded here:
//   - Records never leave the store except by retract. A soft delete is a
//     field (deleted_at) written by the caller. Because the only way to cover
//     a field's dot is a newer write of that field (whose HLC timestamp is
//     larger, as the writer observed the old one) or a retract, a field keeps
//     only its winning value and the join stays a lattice join.
//   - A record entry whose every dot was removed (for example a record made
//     only of set elements that were all removed) stays in the Map as an empty
//     entry. It keeps the invariant that every dot of the context belongs to
//     an entry of the store or to a retracted id, which lets Join look only at
//     the entries of its argument: applying a delta costs O(size of the delta).
//   - A removal adds no dot of its own, and the field written with it (the
//     node's updated_at) can be overwritten by a concurrent edit that never
//     saw it. So an edit that removes an element also leaves a witness dot
//     for its replica in the record (WitnessSet), which nothing removes:
//     digest sync, which finds records by dots the other side lacks, then
//     still finds every record a removal touched. At most one witness dot
//     per replica per record. Map.DependsOn lets receivers hold a live delta
//     until the dots it overwrote have arrived.
//   - The caller's Clock must observe every timestamp it receives (Clock.Observe)
//     before it writes again, so local writes order after what they overwrite;
//     Edit.Set refuses a timestamp not newer than the field it overwrites.
//
// # Seals
//
// A record relayed by another replica must not be forgeable, so every dot a
// record holds is covered by a Seal of the replica it names: that replica's
// ed25519 signature (its id derives from the key, ReplicaOfKey) over one
// salted 16-byte leaf hash per dot it wrote in one transaction, for one
// namespace and record id. A record keeps a seal while any of its dots
// survives (joins merge and collect seals deterministically, so digests stay
// equal), so each surviving dot stays verifiable after overwrites and joins;
// the leaves of overwritten values reveal nothing guessable (the salt is a
// signature prefix only the author can compute). Map.Seal signs a delta's
// own unsealed dots; Map.VerifySeals checks every dot a delta holds (a
// SealCache skips seals already verified). Seals cover what a delta adds,
// never what its context removes: who may remove is the replication
// engine's rule. Cost, measured by BenchmarkSealSave and BenchmarkVerifySave
// on a realistic save of 11 fields and 3 tags: one signature and a keyed
// hash to seal (about 45 µs here), one verification to check (about 70 µs),
// 360 bytes on a 581-byte delta.
//
// # Encoding
//
// Encode writes a canonical msgpack encoding (sorted keys, compact integers,
// a per-encoding replica table and timestamps relative to the smallest one);
// equal states encode to equal bytes, which is what Digest hashes. Decoders
// take Limits, check every length against the bytes that remain before
// allocating, and return errors matching ErrCorrupt on bad input; they never
// panic and never return a partially built value.
//
// Reads that only show a record (a search's hits, a get) decode it with
// DecodeRecordView: the same checks, seals included, and the same fields
// and sets as DecodeRecord (FuzzDecodeRecord compares the two on every
// input), but the seals are checked and dropped and the values are slices
// of the caller's buffer, not copies. A view is read-only: encoding or
// joining it panics, since it would write or pass on a record without its
// seals. Deltas from peers keep DecodeMap and VerifySeals. Decision: a
// separate decoder rather than a lazy seal list, which would have had to
// keep the bytes and decode under a lock on first use, and whose errors
// would have come late. Measured on a realistic sealed save (11 fields, 3
// tags, one seal; BenchmarkDecodeRecordSave and ...ViewSave): the full
// decoder 4.0 µs, 3,800 B, 47 allocations before its field maps were
// sized; now 3.2 µs, 3,276 B, 45; the view 2.0 µs, 2,332 B, 29 — of which
// the field map itself is about 1.1 KB. DecodeRecordViewInto decodes into
// a record made before, its maps cleared and refilled (788 B, 22
// allocations): a reader of many records (a search's hits) keeps one.
package crdt

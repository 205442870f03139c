// Package effective computes the effective view of a memory: the memory as
// its approved governed edits (memory surgery: retract, block, quarantine,
// amend, attenuate) make it look. Every read of the node goes through it,
// so two replicas holding the same memory and the same edits show the same
// thing, whatever order the edits arrived in.
//
// View applies the edits whose status is approved, in a fixed order: by op
// precedence retract, block, quarantine, amend, attenuate, and within an op
// by (clock, edit id). So an attenuate always applies to the amended
// importance, and of two amends the later one's fields win. Pending and
// rejected edits change nothing. An amend's text replaces the content (and
// the content hash), and the title too when the title was derived from the
// old content (memapi.DeriveTitle); an explicit title stays. Importances
// are clamped to [0, 1]. Retract, quarantine and block change no field:
// they come back as Flags, for the caller to hide the memory, hold it back
// from automatic retrieval, or refuse it on the blocked channels.
//
// The package is pure: no storage, clock or shared state. The node
// (node/memory) reads the edits from its store and calls View.
package effective

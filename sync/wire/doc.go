// Package wire defines the replication protocol's messages and their frames.
//
// A frame is one message: a one-byte header (protocol version in the high
// nibble, flags in the low), then the msgpack body of a Message, compressed
// with zstd when that makes it smaller (flag 1). Decoding enforces a frame
// limit before and after decompression and returns errors matching
// ErrCorrupt; it never panics. CRDT payloads inside messages are the crdt
// package's own canonical encodings, decoded by the receiver with its limits.
//
// Messages (Kind):
//   - Deltas: a batch of namespace deltas with a sequence number; the
//     receiver answers Ack with that number once they are applied (or
//     rejected), which opens the sender's window for the next batch.
//   - SyncRequest: "here is my causal context for these namespaces; send what
//     I lack". Sent on queue overflow, on catch-up and by anti-entropy.
//   - SyncReply: what the requester lacked (records with dots outside its
//     context, the sender's context, the retracted ids when they differ),
//     plus the sender's own context so the requester can answer in kind.
//   - Ack.
//   - Tree: one message of a namespace's epidemic broadcast tree
//     (sync/epidemic, driven by sync/replica): Overlay names the
//     namespace, Tree holds the epidemic fields, and a payload is a live
//     delta relayed unchanged in Deltas[0] with its Author (the node whose
//     key signed it). Its id is the SHA-256 of RelayBytes, computed by the
//     receiver. A node of an earlier build refuses the kind as corrupt.
//   - Bindings: signed acl.Binding records (which node hosts which agent),
//     handled by the node's cluster loop. BindingsSum digests the sender's
//     set (alone in a periodic summary); BindingIDs is its index (a short
//     id per binding), so a peer sends only what the sender lacks; Reply
//     asks for the peer's claims or index in return, and Answer marks the
//     frame that answers a probe (Reply without an index). BindingsOf
//     pulls the bindings of the replicas it names: those the sender
//     lacked to check content the receiver sent it.
//
// Protocol version 2 signs every namespace delta: Sig is the sender's
// ed25519 signature over the message kind, namespace, From and the delta
// bytes (NamespaceDelta.SignedBytes), so the causal-context claims a delta
// makes are its sender's and cannot be altered on the way; the records
// inside carry their authors' seals (crdt.Seal). A version-1 frame is
// refused as corrupt.
package wire

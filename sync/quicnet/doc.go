// Package quicnet moves opaque replication frames between nodes over QUIC
// with mutual TLS pinned to the nodes' ed25519 keys.
//
// Each node runs one [Transport] on one UDP port: it listens there and dials
// peers from there. A node's TLS certificate is self-signed and carries the
// node's acl key as its public key, so the TLS 1.3 handshake proves
// possession of that key. A dialer pins the key that membership advertised
// for the peer and refuses any other ([ErrPeerKey]); a listener accepts only
// clients whose key [Config.Allowed] recognises and hands each received frame
// to [Config.Handler] together with the authenticated sender key.
//
// Outbound connections are kept per pinned key and address: a node
// restarted on a new port is its key at another address, and frames for it
// never ride the connection to the old one. [Transport.Prove] makes (or
// finds) that connection without sending anything, so a caller can check
// that an address announced for a key holds it before trusting it.
//
// Every frame travels on its own bidirectional stream: the sender writes a
// 5-byte header (version, big-endian length) and the frame, finishes its
// side, and waits for a 1-byte acknowledgement that the receiver writes after
// its handler has returned. So [Transport.Send] returning nil means the peer's
// handler has the frame. Streams are cheap but not free (~150 µs each on
// loopback): callers batch deltas into frames rather than sending one per
// delta.
//
// A peer that sends a frame longer than [Config.MaxFrameBytes] or malformed
// bytes has that stream cancelled and its connection closed with an
// application error code; the transport keeps serving everybody else.
//
//	tr, err := quicnet.Listen(quicnet.Config{
//		ListenAddr: "0.0.0.0:7947",
//		Identity:   id,
//		Allowed:    members.IsMember,
//		Handler:    func(from ed25519.PublicKey, frame []byte) { inbox <- msg{from, frame} },
//	})
//	...
//	err = tr.Send(ctx, peer.QUICAddr, peer.PublicKey, frame)
package quicnet

package quicnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/mnemohq/mnemo/acl"
)

// ALPN is the TLS application protocol of this wire format. A peer speaking
// another version fails the handshake instead of misreading frames.
const ALPN = "mnemo/1"

// Validity is not checked by either side (keys are pinned, not chained to a
// CA), so fixed dates keep the certificate a pure function of the key: no
// clock, and no expiry to forget about. 9999-12-31 is RFC 5280's "no
// well-defined expiration date".
var (
	certNotBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	certNotAfter  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// selfSignedCert returns a TLS certificate whose public key is the node key.
func selfSignedCert(id acl.Identity) (tls.Certificate, error) {
	sum := sha256.Sum256(id.Public)
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(sum[:16]),
		Subject:      pkix.Name{CommonName: string(id.NodeID())},
		NotBefore:    certNotBefore,
		NotAfter:     certNotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, id.Public, id.Private)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("quicnet: create certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: id.Private}, nil
}

// certKey extracts the ed25519 key of the peer's leaf certificate. The TLS
// 1.3 handshake has already proved that the peer holds its private half, so
// nothing about the certificate besides the key matters.
func certKey(rawCerts [][]byte) (ed25519.PublicKey, error) {
	if len(rawCerts) == 0 {
		return nil, errors.New("quicnet: peer sent no certificate")
	}
	cert, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return nil, fmt.Errorf("quicnet: peer certificate: %w", err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("quicnet: peer certificate key is %T, want ed25519", cert.PublicKey)
	}
	return pub, nil
}

// serverTLS accepts any client whose certificate key allowed recognises.
func serverTLS(cert tls.Certificate, allowed func(ed25519.PublicKey) bool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAnyClientCert,
		NextProtos:   []string{ALPN},
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			pub, err := certKey(rawCerts)
			if err != nil {
				return err
			}
			if !allowed(pub) {
				return fmt.Errorf("%w: client %s", ErrNotAllowed, acl.NodeIDOf(pub))
			}
			return nil
		},
	}
}

// clientTLS accepts only a server presenting pinned. On a mismatch it
// records the presented key in got so the dialer can report it whatever
// error quic-go wraps the failure in.
func clientTLS(cert tls.Certificate, pinned ed25519.PublicKey, got *atomic.Pointer[ed25519.PublicKey]) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{ALPN},
		ServerName:   string(acl.NodeIDOf(pinned)),
		// No CA: the chain is replaced by the pin below.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			pub, err := certKey(rawCerts)
			if err != nil {
				return err
			}
			if !pub.Equal(pinned) {
				got.Store(&pub)
				return fmt.Errorf("%w: want %s, peer presented %s", ErrPeerKey, acl.NodeIDOf(pinned), acl.NodeIDOf(pub))
			}
			return nil
		},
	}
}

package projection

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/mnemohq/mnemo/namespace"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxSpecBytes bounds an encoded Spec. The field limits keep a valid spec
// well under it (about 34 KiB at most).
const MaxSpecBytes = 64 << 10

// specVersion leads every encoding.
const specVersion = 1

// EncodeSpec returns the canonical msgpack encoding of a valid spec:
//
//	[version=1, id, source, target, creator, created_at_unix_s, created_at_ns,
//	 level, live, [types, tags, min_confidence|nil, min_importance|nil,
//	 linked_files, predicate]]
//
// with addresses in canonical text form, compact integers, floats always as
// float64 and lists as (possibly empty) arrays. Equal specs encode to equal
// bytes; CreatedAt keeps its instant, not its location. Errors wrap
// ErrInvalid (the spec fails Validate).
func EncodeSpec(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return encodeSpec(s), nil
}

func encodeSpec(s Spec) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	// Writes to a bytes.Buffer cannot fail.
	strs := func(vs []string) {
		_ = enc.EncodeArrayLen(len(vs))
		for _, v := range vs {
			_ = enc.EncodeString(v)
		}
	}
	optFloat := func(v *float64) {
		if v == nil {
			_ = enc.EncodeNil()
			return
		}
		_ = enc.EncodeFloat64(*v)
	}
	_ = enc.EncodeArrayLen(10)
	_ = enc.EncodeUint(specVersion)
	_ = enc.EncodeString(s.ID)
	_ = enc.EncodeString(s.Source.String())
	_ = enc.EncodeString(s.Target.String())
	_ = enc.EncodeString(s.Creator.String())
	_ = enc.EncodeInt(s.CreatedAt.Unix())
	_ = enc.EncodeUint(uint64(s.CreatedAt.Nanosecond()))
	_ = enc.EncodeUint(uint64(s.Level))
	_ = enc.EncodeBool(s.Live)
	_ = enc.EncodeArrayLen(6)
	strs(s.Filter.Types)
	strs(s.Filter.Tags)
	optFloat(s.Filter.MinConfidence)
	optFloat(s.Filter.MinImportance)
	strs(s.Filter.LinkedFiles)
	_ = enc.EncodeString(s.Filter.Predicate)
	return buf.Bytes()
}

// DecodeSpec decodes what EncodeSpec wrote. It accepts only the canonical
// encoding of a valid spec (so DecodeSpec(b) re-encodes to exactly b), checks
// every length before allocating, and never panics. Empty lists decode as
// nil and CreatedAt in UTC. Errors wrap ErrCorrupt (and, when the decoded
// spec fails Validate, ErrInvalid too).
func DecodeSpec(b []byte) (Spec, error) {
	if len(b) > MaxSpecBytes {
		return Spec{}, fmt.Errorf("%w: %d bytes, limit %d", ErrCorrupt, len(b), MaxSpecBytes)
	}
	s, err := decodeSpec(b)
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !bytes.Equal(encodeSpec(s), b) {
		return Spec{}, fmt.Errorf("%w: not the canonical encoding", ErrCorrupt)
	}
	return s, nil
}

type specReader struct {
	r *bytes.Reader
	d *msgpack.Decoder
}

func decodeSpec(b []byte) (Spec, error) {
	r := bytes.NewReader(b)
	// A *bytes.Reader is an io.ByteScanner, so the decoder reads it directly
	// without buffering ahead: r.Len() is what remains undecoded.
	sr := &specReader{r: r, d: msgpack.NewDecoder(r)}
	var s Spec
	if err := sr.arrayLen(10, 10, "spec"); err != nil {
		return s, err
	}
	v, err := sr.d.DecodeUint64()
	if err != nil {
		return s, fmt.Errorf("version: %w", err)
	}
	if v != specVersion {
		return s, fmt.Errorf("unknown version %d", v)
	}
	if s.ID, err = sr.str("id", MaxIDLen); err != nil {
		return s, err
	}
	if s.Source, err = sr.addr("source"); err != nil {
		return s, err
	}
	if s.Target, err = sr.addr("target"); err != nil {
		return s, err
	}
	if s.Creator, err = sr.addr("creator"); err != nil {
		return s, err
	}
	sec, err := sr.d.DecodeInt64()
	if err != nil {
		return s, fmt.Errorf("created_at: %w", err)
	}
	nsec, err := sr.d.DecodeUint64()
	if err != nil || nsec >= 1e9 {
		return s, fmt.Errorf("created_at: bad nanoseconds (%v)", err)
	}
	s.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	lv, err := sr.d.DecodeUint64()
	if err != nil || lv > math.MaxUint8 {
		return s, fmt.Errorf("level: bad value (%v)", err)
	}
	s.Level = Level(lv)
	if s.Live, err = sr.d.DecodeBool(); err != nil {
		return s, fmt.Errorf("live: %w", err)
	}
	if err := sr.arrayLen(6, 6, "filter"); err != nil {
		return s, err
	}
	f := &s.Filter
	if f.Types, err = sr.strs("types", MaxValueLen); err != nil {
		return s, err
	}
	if f.Tags, err = sr.strs("tags", MaxValueLen); err != nil {
		return s, err
	}
	if f.MinConfidence, err = sr.optFloat("min_confidence"); err != nil {
		return s, err
	}
	if f.MinImportance, err = sr.optFloat("min_importance"); err != nil {
		return s, err
	}
	if f.LinkedFiles, err = sr.strs("linked_files", MaxGlobLen); err != nil {
		return s, err
	}
	if f.Predicate, err = sr.str("predicate", MaxPredicateLen); err != nil {
		return s, err
	}
	if r.Len() != 0 {
		return s, fmt.Errorf("%d trailing bytes", r.Len())
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

func (sr *specReader) arrayLen(lo, hi int, what string) error {
	n, err := sr.d.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n < lo || n > hi {
		return fmt.Errorf("%s: array of %d, want %d..%d", what, n, lo, hi)
	}
	return nil
}

// str reads a string of at most max bytes, checking the length against the
// remaining input before allocating.
func (sr *specReader) str(what string, max int) (string, error) {
	n, err := sr.d.DecodeBytesLen()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case n < 0:
		return "", fmt.Errorf("%s: nil string", what)
	case n > max:
		return "", fmt.Errorf("%s: %d bytes, limit %d", what, n, max)
	case n > sr.r.Len():
		return "", fmt.Errorf("%s: %d bytes declared, %d remain", what, n, sr.r.Len())
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(sr.r, buf); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return string(buf), nil
}

func (sr *specReader) strs(what string, max int) ([]string, error) {
	n, err := sr.d.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if n < 0 || n > MaxFilterValues {
		return nil, fmt.Errorf("%s: array of %d, want 0..%d", what, n, MaxFilterValues)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([]string, 0, n)
	for i := range n {
		s, err := sr.str(fmt.Sprintf("%s[%d]", what, i), max)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (sr *specReader) addr(what string) (namespace.Address, error) {
	s, err := sr.str(what, namespace.MaxAddressLen)
	if err != nil {
		return namespace.Address{}, err
	}
	var a namespace.Address
	if err := a.UnmarshalText([]byte(s)); err != nil {
		return a, fmt.Errorf("%s: %w", what, err)
	}
	return a, nil
}

func (sr *specReader) optFloat(what string) (*float64, error) {
	c, err := sr.d.PeekCode()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if c == 0xc0 { // nil
		_ = sr.d.DecodeNil()
		return nil, nil
	}
	v, err := sr.d.DecodeFloat64()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &v, nil
}

package crdt

// CheckMsgpack reports whether b is exactly one well-formed msgpack value
// whose every declared length fits in the bytes that remain, nested at most
// maxDepth deep. Generic msgpack decoders allocate a container of the length
// a peer declares before reading it, so a few hostile bytes can ask for
// gigabytes; callers decoding outside bytes with msgpack.Unmarshal run this
// first. Errors match ErrCorrupt.
func CheckMsgpack(b []byte, maxDepth int) error {
	off, err := checkValue(b, 0, maxDepth)
	if err != nil {
		return err
	}
	if off != len(b) {
		return corrupt("%d trailing bytes after the msgpack value", len(b)-off)
	}
	return nil
}

func beN(b []byte, off, n int) (uint64, int, error) {
	if off+n > len(b) {
		return 0, off, corrupt("truncated at byte %d", off)
	}
	var v uint64
	for _, c := range b[off : off+n] {
		v = v<<8 | uint64(c)
	}
	return v, off + n, nil
}

// checkValue checks the value at off and returns the offset after it.
func checkValue(b []byte, off, depth int) (int, error) {
	if off >= len(b) {
		return off, corrupt("truncated at byte %d", off)
	}
	if depth < 0 {
		return off, corrupt("msgpack nested too deep")
	}
	c := b[off]
	off++
	var n uint64
	var err error
	skip := func(k uint64) (int, error) {
		if k > uint64(len(b)-off) {
			return off, corrupt("length %d exceeds the %d bytes left", k, len(b)-off)
		}
		return off + int(k), nil
	}
	elems := func(k uint64) (int, error) {
		if k > uint64(len(b)-off) { // every element takes at least a byte
			return off, corrupt("%d elements exceed the %d bytes left", k, len(b)-off)
		}
		for range k {
			if off, err = checkValue(b, off, depth-1); err != nil {
				return off, err
			}
		}
		return off, nil
	}
	switch {
	case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		return off, nil
	case c >= 0x80 && c <= 0x8f:
		return elems(2 * uint64(c&0x0f))
	case c >= 0x90 && c <= 0x9f:
		return elems(uint64(c & 0x0f))
	case c >= 0xa0 && c <= 0xbf:
		return skip(uint64(c & 0x1f))
	}
	switch c {
	case 0xc4, 0xd9: // bin8, str8
		n, off, err = beN(b, off, 1)
	case 0xc5, 0xda:
		n, off, err = beN(b, off, 2)
	case 0xc6, 0xdb:
		n, off, err = beN(b, off, 4)
	case 0xc7, 0xc8, 0xc9: // ext: length, type, data
		w := map[byte]int{0xc7: 1, 0xc8: 2, 0xc9: 4}[c]
		if n, off, err = beN(b, off, w); err != nil {
			return off, err
		}
		n++
	case 0xca, 0xce, 0xd2:
		n = 4
	case 0xcb, 0xcf, 0xd3:
		n = 8
	case 0xcc, 0xd0:
		n = 1
	case 0xcd, 0xd1:
		n = 2
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 plus the type byte
		n = 1 + uint64(1)<<(c-0xd4)
	case 0xdc:
		if n, off, err = beN(b, off, 2); err != nil {
			return off, err
		}
		return elems(n)
	case 0xdd:
		if n, off, err = beN(b, off, 4); err != nil {
			return off, err
		}
		return elems(n)
	case 0xde:
		if n, off, err = beN(b, off, 2); err != nil {
			return off, err
		}
		return elems(2 * n)
	case 0xdf:
		if n, off, err = beN(b, off, 4); err != nil {
			return off, err
		}
		return elems(2 * n)
	default:
		return off, corrupt("invalid msgpack code 0x%02x at byte %d", c, off-1)
	}
	if err != nil {
		return off, err
	}
	return skip(n)
}

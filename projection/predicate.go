package projection

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the predicate language. See the package documentation.
const (
	MaxPredicateLen   = 1024 // bytes of source text
	MaxPredicateDepth = 32   // height of the syntax tree; also nesting of "(" and "not"
	MaxListItems      = 64   // literals in one [...] list
)

// Predicate is a compiled filter expression: a syntax tree, never code. The
// zero of *Predicate (nil) matches every item. A Predicate is immutable and
// safe for concurrent use.
type Predicate struct {
	root *node
}

// CompilePredicate parses src. Errors are *PredicateError values (wrapping
// ErrInvalid) that give the byte position of the problem.
func CompilePredicate(src string) (*Predicate, error) {
	if len(src) > MaxPredicateLen {
		return nil, &PredicateError{Pos: MaxPredicateLen + 1, Msg: fmt.Sprintf("predicate is %d bytes, limit %d", len(src), MaxPredicateLen)}
	}
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, w := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			i += w
		}
		return nil, &PredicateError{Pos: i + 1, Msg: "invalid UTF-8"}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t)
	}
	if n := tooDeep(root, 1); n != nil {
		return nil, &PredicateError{Pos: n.pos + 1, Msg: fmt.Sprintf("expression nested deeper than %d", MaxPredicateDepth)}
	}
	return &Predicate{root: root}, nil
}

// Eval reports whether it satisfies the predicate. A nil Predicate matches
// everything. Eval does not look at DeletedAt: Filter.Match does.
func (p *Predicate) Eval(it Item) bool {
	if p == nil {
		return true
	}
	return p.root.eval(&it)
}

// String returns the canonical text of the predicate: lowercase keywords and
// fields, single spaces, only the parentheses precedence needs, type and tag
// literals lowercased, numbers in shortest decimal form. Compiling it gives
// an equal Predicate (when it stays within MaxPredicateLen).
func (p *Predicate) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	p.root.write(&b, nOr)
	return b.String()
}

// ---- fields ----

type fieldType uint8

const (
	ftString fieldType = iota + 1 // = != < <= > >= contains in [...]
	ftText                        // contains
	ftNumber                      // = != < <= > >= in [...]
	ftSet                         // "x" in FIELD; linked_files also: matches "glob"
)

type field struct {
	name string
	typ  fieldType
	fold bool // compared ASCII/Unicode case-insensitively (lowercased)
	str  func(*Item) string
	num  func(*Item) float64
	set  func(*Item) []string
}

// fieldTable is the immutable list of fields a predicate may name.
var fieldTable = []*field{
	{name: "id", typ: ftString, str: func(it *Item) string { return it.ID }},
	{name: "type", typ: ftString, fold: true, str: func(it *Item) string { return it.Type }},
	{name: "title", typ: ftString, str: func(it *Item) string { return it.Title }},
	{name: "scope", typ: ftString, str: func(it *Item) string { return it.Scope }},
	{name: "project", typ: ftString, str: func(it *Item) string { return it.Project }},
	{name: "subject_type", typ: ftString, str: func(it *Item) string { return it.SubjectType }},
	{name: "subject_id", typ: ftString, str: func(it *Item) string { return it.SubjectID }},
	{name: "session_id", typ: ftString, str: func(it *Item) string { return it.SessionID }},
	{name: "channel", typ: ftString, str: func(it *Item) string { return it.Channel }},
	{name: "author", typ: ftString, str: func(it *Item) string { return it.Author }},
	{name: "topic_key", typ: ftString, str: func(it *Item) string { return it.TopicKey }},
	{name: "lineage", typ: ftString, str: func(it *Item) string { return it.Lineage }},
	{name: "content", typ: ftText, str: func(it *Item) string { return it.Content }},
	{name: "summary", typ: ftText, str: func(it *Item) string { return it.Summary }},
	{name: "importance", typ: ftNumber, num: func(it *Item) float64 { return it.Importance }},
	{name: "confidence", typ: ftNumber, num: func(it *Item) float64 { return it.Confidence }},
	{name: "tags", typ: ftSet, fold: true, set: func(it *Item) []string { return it.Tags }},
	{name: "linked_files", typ: ftSet, set: func(it *Item) []string { return it.LinkedFiles }},
}

func lookupField(name string) *field {
	for _, f := range fieldTable {
		if f.name == name {
			return f
		}
	}
	return nil
}

func fieldNames(typ ...fieldType) string {
	var names []string
	for _, f := range fieldTable {
		if slices.Contains(typ, f.typ) {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, ", ")
}

// ---- syntax tree ----

type nodeKind uint8

const (
	nOr       nodeKind = iota + 1 // kids, at least two, none an nOr
	nAnd                          // kids, at least two, none an nAnd
	nNot                          // kids[0]
	nCmp                          // field op str|num
	nInList                       // field in [strs|nums]
	nInSet                        // str in field (a set)
	nContains                     // field contains str (lowercased)
	nMatches                      // linked_files matches str (a glob)
)

type node struct {
	kind  nodeKind
	pos   int // 0-based byte offset of the token that begins the node
	kids  []*node
	field *field
	op    string
	str   string
	num   float64
	strs  []string
	nums  []float64
}

func (n *node) eval(it *Item) bool {
	switch n.kind {
	case nOr:
		for _, k := range n.kids {
			if k.eval(it) {
				return true
			}
		}
		return false
	case nAnd:
		for _, k := range n.kids {
			if !k.eval(it) {
				return false
			}
		}
		return true
	case nNot:
		return !n.kids[0].eval(it)
	case nCmp:
		if n.field.typ == ftNumber {
			return compareNum(n.field.num(it), n.op, n.num)
		}
		return compareStr(n.field.value(it), n.op, n.str)
	case nInList:
		if n.field.typ == ftNumber {
			return slices.Contains(n.nums, n.field.num(it))
		}
		return slices.Contains(n.strs, n.field.value(it))
	case nInSet:
		for _, v := range n.field.set(it) {
			if n.field.fold {
				v = strings.ToLower(v)
			}
			if v == n.str {
				return true
			}
		}
		return false
	case nContains:
		return strings.Contains(strings.ToLower(n.field.str(it)), n.str)
	case nMatches:
		for _, f := range n.field.set(it) {
			if MatchGlob(n.str, f) {
				return true
			}
		}
		return false
	}
	return false
}

// value is the field's string as comparisons see it.
func (f *field) value(it *Item) string {
	if f.fold {
		return strings.ToLower(f.str(it))
	}
	return f.str(it)
}

func compareNum(a float64, op string, b float64) bool {
	switch op {
	case "=":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	}
	return false
}

func compareStr(a, op, b string) bool {
	c := strings.Compare(a, b)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

// tooDeep returns the first node found at depth MaxPredicateDepth+1, if any.
func tooDeep(n *node, depth int) *node {
	if depth > MaxPredicateDepth {
		return n
	}
	for _, k := range n.kids {
		if d := tooDeep(k, depth+1); d != nil {
			return d
		}
	}
	return nil
}

// write prints n in canonical form; parent is the kind of the enclosing
// operator, which decides whether n needs parentheses.
func (n *node) write(b *strings.Builder, parent nodeKind) {
	switch n.kind {
	case nOr, nAnd:
		sep := " or "
		paren := parent == nAnd || parent == nNot
		if n.kind == nAnd {
			sep, paren = " and ", parent == nNot
		}
		if paren {
			b.WriteByte('(')
		}
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(sep)
			}
			k.write(b, n.kind)
		}
		if paren {
			b.WriteByte(')')
		}
	case nNot:
		b.WriteString("not ")
		n.kids[0].write(b, nNot)
	case nCmp:
		b.WriteString(n.field.name + " " + n.op + " ")
		n.writeLit(b, n.str, n.num)
	case nInList:
		b.WriteString(n.field.name + " in [")
		for i := range max(len(n.strs), len(n.nums)) {
			if i > 0 {
				b.WriteString(", ")
			}
			if n.field.typ == ftNumber {
				n.writeLit(b, "", n.nums[i])
			} else {
				n.writeLit(b, n.strs[i], 0)
			}
		}
		b.WriteByte(']')
	case nInSet:
		b.WriteString(quote(n.str) + " in " + n.field.name)
	case nContains:
		b.WriteString(n.field.name + " contains " + quote(n.str))
	case nMatches:
		b.WriteString(n.field.name + " matches " + quote(n.str))
	}
}

func (n *node) writeLit(b *strings.Builder, s string, f float64) {
	if n.field.typ == ftNumber {
		b.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
		return
	}
	b.WriteString(quote(s))
}

// quote writes a string literal with the language's only two escapes.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// ---- lexer ----

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tOp
	tLParen
	tRParen
	tLBrack
	tRBrack
	tComma
)

type token struct {
	kind tokKind
	pos  int    // 0-based byte offset
	raw  string // source text
	text string // identifiers: lowercased; strings: unescaped
	num  float64
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for {
		for i < len(src) && isSpace(src[i]) {
			i++
		}
		if i == len(src) {
			return append(toks, token{kind: tEOF, pos: i}), nil
		}
		start := i
		c := src[i]
		switch {
		case isLetter(c):
			for i < len(src) && (isLetter(src[i]) || isDigit(src[i])) {
				i++
			}
			toks = append(toks, token{kind: tIdent, pos: start, raw: src[start:i], text: strings.ToLower(src[start:i])})
		case isDigit(c) || (c == '-' && i+1 < len(src) && isDigit(src[i+1])):
			i++
			for i < len(src) && isDigit(src[i]) {
				i++
			}
			if i < len(src) && src[i] == '.' {
				i++
				if i == len(src) || !isDigit(src[i]) {
					return nil, &PredicateError{Pos: start + 1, Msg: fmt.Sprintf("malformed number %q", src[start:i])}
				}
				for i < len(src) && isDigit(src[i]) {
					i++
				}
			}
			if i < len(src) && (isLetter(src[i]) || src[i] == '.') {
				return nil, &PredicateError{Pos: start + 1, Msg: fmt.Sprintf("malformed number %q", src[start:i+1])}
			}
			v, err := strconv.ParseFloat(src[start:i], 64)
			if err != nil || math.IsInf(v, 0) {
				return nil, &PredicateError{Pos: start + 1, Msg: fmt.Sprintf("number %s out of range", shorten(src[start:i]))}
			}
			toks = append(toks, token{kind: tNumber, pos: start, raw: src[start:i], num: v})
		case c == '"':
			var b strings.Builder
			i++
			for {
				if i == len(src) {
					return nil, &PredicateError{Pos: start + 1, Msg: "unterminated string"}
				}
				if src[i] == '"' {
					i++
					break
				}
				if src[i] == '\\' {
					if i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '\\') {
						b.WriteByte(src[i+1])
						i += 2
						continue
					}
					r, _ := utf8.DecodeRuneInString(src[min(i+1, len(src)):])
					msg := `invalid escape "\` + string(r) + `" (only \" and \\)`
					if i+1 == len(src) {
						msg = "unterminated string"
					}
					return nil, &PredicateError{Pos: i + 1, Msg: msg}
				}
				b.WriteByte(src[i])
				i++
			}
			toks = append(toks, token{kind: tString, pos: start, raw: src[start:i], text: b.String()})
		case c == '(' || c == ')' || c == '[' || c == ']' || c == ',':
			i++
			k := tComma
			switch c {
			case '(':
				k = tLParen
			case ')':
				k = tRParen
			case '[':
				k = tLBrack
			case ']':
				k = tRBrack
			}
			toks = append(toks, token{kind: k, pos: start, raw: src[start:i]})
		case c == '=' || c == '<' || c == '>' || c == '!':
			i++
			if i < len(src) && src[i] == '=' && c != '=' {
				i++
			}
			if src[start:i] == "!" {
				return nil, &PredicateError{Pos: start + 1, Msg: `unexpected character "!" (did you mean "!=" or "not"?)`}
			}
			toks = append(toks, token{kind: tOp, pos: start, raw: src[start:i], text: src[start:i]})
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, &PredicateError{Pos: start + 1, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
	}
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func shorten(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// ---- parser ----

// parser is a recursive-descent parser over the token slice:
//
//	or      = and { "or" and }
//	and     = unary { "and" unary }
//	unary   = "not" unary | primary
//	primary = "(" or ")" | condition
type parser struct {
	toks   []token
	i      int
	nested int // open "(" and "not" on the current path
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isKeyword(word string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == word
}

func (p *parser) unexpected(t token) error {
	if t.kind == tEOF {
		return &PredicateError{Pos: t.pos + 1, Msg: "unexpected end of predicate"}
	}
	return &PredicateError{Pos: t.pos + 1, Msg: fmt.Sprintf("unexpected token %q", shorten(t.raw))}
}

func errAt(t token, format string, args ...any) error {
	return &PredicateError{Pos: t.pos + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parseOr() (*node, error) {
	return p.parseList("or", nOr, p.parseAnd)
}

func (p *parser) parseAnd() (*node, error) {
	return p.parseList("and", nAnd, p.parseUnary)
}

// parseList parses operands joined by keyword into one flat n-ary node.
func (p *parser) parseList(keyword string, kind nodeKind, operand func() (*node, error)) (*node, error) {
	pos := p.peek().pos
	first, err := operand()
	if err != nil {
		return nil, err
	}
	if !p.isKeyword(keyword) {
		return first, nil
	}
	n := &node{kind: kind, pos: pos}
	add := func(k *node) {
		if k.kind == kind { // "(a or b) or c" is "a or b or c"
			n.kids = append(n.kids, k.kids...)
		} else {
			n.kids = append(n.kids, k)
		}
	}
	add(first)
	for p.isKeyword(keyword) {
		p.next()
		k, err := operand()
		if err != nil {
			return nil, err
		}
		add(k)
	}
	return n, nil
}

func (p *parser) enter(t token) error {
	p.nested++
	if p.nested > MaxPredicateDepth {
		return errAt(t, "expression nested deeper than %d", MaxPredicateDepth)
	}
	return nil
}

func (p *parser) parseUnary() (*node, error) {
	if !p.isKeyword("not") {
		return p.parsePrimary()
	}
	t := p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer func() { p.nested-- }()
	k, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	return &node{kind: nNot, pos: t.pos, kids: []*node{k}}, nil
}

func (p *parser) parsePrimary() (*node, error) {
	t := p.next()
	switch t.kind {
	case tLParen:
		if err := p.enter(t); err != nil {
			return nil, err
		}
		defer func() { p.nested-- }()
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			if c.kind == tEOF {
				return nil, errAt(c, "missing %q", ")")
			}
			return nil, p.unexpected(c)
		}
		return n, nil
	case tString:
		// "value" in SETFIELD
		if !p.isKeyword("in") {
			return nil, p.unexpected(p.peek())
		}
		p.next()
		ft := p.next()
		if ft.kind != tIdent || isReserved(ft.text) {
			return nil, p.unexpected(ft)
		}
		f := lookupField(ft.text)
		switch {
		case f == nil:
			return nil, errAt(ft, "unknown field %q", shorten(ft.raw))
		case f.typ != ftSet:
			return nil, errAt(ft, "%q in %s: %s is not a set (sets: %s; for a list write %s in [...])", shorten(t.text), f.name, f.name, fieldNames(ftSet), f.name)
		}
		v := t.text
		if f.fold {
			v = strings.ToLower(v)
		}
		return &node{kind: nInSet, pos: t.pos, field: f, str: v}, nil
	case tIdent:
		if isReserved(t.text) {
			return nil, p.unexpected(t)
		}
		f := lookupField(t.text)
		if f == nil {
			return nil, errAt(t, "unknown field %q", shorten(t.raw))
		}
		return p.parseCondition(t, f)
	}
	return nil, p.unexpected(t)
}

func isReserved(word string) bool {
	switch word {
	case "and", "or", "not", "in", "contains", "matches":
		return true
	}
	return false
}

// parseCondition parses what follows a field name.
func (p *parser) parseCondition(ft token, f *field) (*node, error) {
	t := p.next()
	n := &node{pos: ft.pos, field: f}
	switch {
	case t.kind == tOp:
		if f.typ != ftString && f.typ != ftNumber {
			return nil, errAt(t, "%s cannot be compared with %s (%s)", f.name, t.text, f.usage())
		}
		n.kind, n.op = nCmp, t.text
		lit, err := p.literal(f)
		if err != nil {
			return nil, err
		}
		n.str, n.num = lit.text, lit.num
		return n, nil
	case t.kind == tIdent && t.text == "contains":
		if f.typ != ftString && f.typ != ftText {
			return nil, errAt(t, "%s does not support contains (%s)", f.name, f.usage())
		}
		s := p.next()
		if s.kind != tString {
			return nil, p.expected(s, "a string")
		}
		n.kind, n.str = nContains, strings.ToLower(s.text)
		return n, nil
	case t.kind == tIdent && t.text == "in":
		if f.typ != ftString && f.typ != ftNumber {
			return nil, errAt(t, "%s does not support in [...] (%s)", f.name, f.usage())
		}
		n.kind = nInList
		if b := p.next(); b.kind != tLBrack {
			return nil, p.expected(b, `"["`)
		}
		for {
			lit, err := p.literal(f)
			if err != nil {
				return nil, err
			}
			if len(n.strs)+len(n.nums) == MaxListItems {
				return nil, errAt(lit, "list longer than %d items", MaxListItems)
			}
			if f.typ == ftNumber {
				n.nums = append(n.nums, lit.num)
			} else {
				n.strs = append(n.strs, lit.text)
			}
			c := p.next()
			if c.kind == tRBrack {
				return n, nil
			}
			if c.kind != tComma {
				return nil, p.expected(c, `"," or "]"`)
			}
		}
	case t.kind == tIdent && t.text == "matches":
		if f.name != "linked_files" {
			return nil, errAt(t, "only linked_files supports matches")
		}
		s := p.next()
		if s.kind != tString {
			return nil, p.expected(s, "a glob string")
		}
		if err := CheckGlob(s.text); err != nil {
			return nil, errAt(s, "%s", strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		}
		n.kind, n.str = nMatches, s.text
		return n, nil
	}
	if t.kind == tEOF {
		return nil, p.unexpected(t)
	}
	return nil, errAt(t, "unexpected token %q after %s (%s)", shorten(t.raw), f.name, f.usage())
}

// literal reads a literal of the field's type; fold fields are lowercased.
func (p *parser) literal(f *field) (token, error) {
	t := p.next()
	switch {
	case f.typ == ftNumber && t.kind == tNumber:
		return t, nil
	case f.typ == ftNumber:
		return t, p.expected(t, "a number for "+f.name)
	case t.kind == tString:
		if f.fold {
			t.text = strings.ToLower(t.text)
		}
		return t, nil
	}
	return t, p.expected(t, "a string for "+f.name)
}

func (p *parser) expected(t token, what string) error {
	if t.kind == tEOF {
		return errAt(t, "unexpected end of predicate, expected %s", what)
	}
	return errAt(t, "unexpected token %q, expected %s", shorten(t.raw), what)
}

func (f *field) usage() string {
	switch f.typ {
	case ftString:
		return `string field: = != < <= > >= "...", contains "...", in ["...", ...]`
	case ftText:
		return `text field: contains "..."`
	case ftNumber:
		return "number field: = != < <= > >= N, in [N, ...]"
	}
	if f.name == "linked_files" {
		return `set field: "..." in linked_files, linked_files matches "glob"`
	}
	return `set field: "..." in ` + f.name
}

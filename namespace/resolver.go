package namespace

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSessionKeyLen is the longest session key a Resolver considers, in bytes.
// Longer keys resolve to the fallback.
const MaxSessionKeyLen = 512

// ErrInvalidRule is wrapped by NewResolver's errors about a rule.
var ErrInvalidRule = errors.New("namespace: invalid principal rule")

// RuleMode says how a Rule's Match is compared with a session key.
type RuleMode string

// The rule modes.
const (
	ModeMap    RuleMode = "map"    // Match equals the session key
	ModePrefix RuleMode = "prefix" // Match is a prefix of the session key
	ModeRegex  RuleMode = "regex"  // Match is an RE2 pattern found in the session key (unanchored)
)

// Rule maps session keys to a principal.
type Rule struct {
	Mode  RuleMode `json:"mode"`
	Match string   `json:"match"` // map: exact session key; prefix: key prefix; regex: RE2 pattern
	// Principal is an agent name or agent:// address. In regex mode it may
	// use $1 or ${name} from the match; the expansion is passed through
	// SanitizeName.
	Principal string `json:"principal"`
}

type compiledRule struct {
	mode     RuleMode
	match    string
	re       *regexp.Regexp
	static   Address // set unless template is
	template string  // regex name template with $ references, "agent://" removed
}

// Resolver maps session keys to principals. It is immutable and safe for
// concurrent use.
type Resolver struct {
	rules    []compiledRule
	fallback Address
}

// NewResolver checks rules and fallback and returns a Resolver. Every rule
// needs a known mode, a non-empty Match (at most MaxSessionKeyLen bytes for
// map and prefix, since longer keys are never considered), a regex that
// compiles, and a principal that is a valid agent; $ references in a regex
// principal must name groups of its pattern. Errors wrap ErrInvalidRule and
// name the rule's index; fallback must be an agent root.
func NewResolver(rules []Rule, fallback Address) (*Resolver, error) {
	if fallback.Kind != KindAgent || fallback.Path != "" || validName(fallback.Name) != "" {
		return nil, invalid(fallback.String(), "resolver fallback must be an agent root")
	}
	r := &Resolver{rules: make([]compiledRule, 0, len(rules)), fallback: fallback}
	for i, rule := range rules {
		c, err := compileRule(rule)
		if err != nil {
			return nil, fmt.Errorf("%w %d (%s %q): %w", ErrInvalidRule, i, rule.Mode, shorten(rule.Match), err)
		}
		r.rules = append(r.rules, c)
	}
	return r, nil
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func compileRule(rule Rule) (compiledRule, error) {
	c := compiledRule{mode: rule.Mode, match: rule.Match}
	switch rule.Mode {
	case ModeMap, ModePrefix, ModeRegex:
	case "":
		return c, errors.New("missing mode (want map, prefix or regex)")
	default:
		return c, fmt.Errorf("unknown mode %q (want map, prefix or regex)", rule.Mode)
	}
	if rule.Match == "" {
		return c, errors.New("empty match")
	}
	if rule.Mode != ModeRegex && len(rule.Match) > MaxSessionKeyLen {
		return c, fmt.Errorf("match is %d bytes, longer than the %d-byte session key limit", len(rule.Match), MaxSessionKeyLen)
	}
	if rule.Mode == ModeRegex {
		re, err := regexp.Compile(rule.Match)
		if err != nil {
			return c, fmt.Errorf("bad pattern: %w", err)
		}
		c.re = re
		if strings.Contains(rule.Principal, "$") {
			tmpl := rule.Principal
			if len(tmpl) >= len("agent://") && strings.EqualFold(tmpl[:len("agent://")], "agent://") {
				tmpl = tmpl[len("agent://"):]
			}
			if strings.Contains(tmpl, "://") {
				return c, fmt.Errorf("principal %q: a principal must be an agent", rule.Principal)
			}
			if err := checkTemplate(re, tmpl); err != nil {
				return c, fmt.Errorf("principal %q: %w", rule.Principal, err)
			}
			c.template = tmpl
			return c, nil
		}
	}
	p, err := ParsePrincipal(rule.Principal)
	if err != nil {
		return c, fmt.Errorf("principal: %w", err)
	}
	c.static = p
	return c, nil
}

// checkTemplate reports $ references in tmpl that re cannot supply, and
// malformed ones, which regexp.Expand would otherwise copy or drop silently
// (a classic slip: "$1x" means the group named "1x", not $1 then "x").
// The scanning follows regexp.Regexp.Expand.
func checkTemplate(re *regexp.Regexp, tmpl string) error {
	for {
		i := strings.IndexByte(tmpl, '$')
		if i < 0 {
			return nil
		}
		tmpl = tmpl[i+1:]
		if strings.HasPrefix(tmpl, "$") {
			tmpl = tmpl[1:]
			continue
		}
		brace := strings.HasPrefix(tmpl, "{")
		if brace {
			tmpl = tmpl[1:]
		}
		n := 0
		for n < len(tmpl) {
			r, size := utf8.DecodeRuneInString(tmpl[n:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
				break
			}
			n += size
		}
		if n == 0 || brace && (n >= len(tmpl) || tmpl[n] != '}') {
			return errors.New("malformed $ reference (use $1, ${1} or ${name}; $$ for a literal $)")
		}
		ref := tmpl[:n]
		tmpl = tmpl[n:]
		if brace {
			tmpl = tmpl[1:]
		}
		if num, ok := groupNumber(ref); ok {
			if num > re.NumSubexp() {
				return fmt.Errorf("$%s: the pattern has only %d groups", ref, re.NumSubexp())
			}
		} else if re.SubexpIndex(ref) < 0 {
			return fmt.Errorf("${%s}: the pattern has no group of that name", ref)
		}
	}
}

// groupNumber parses ref as regexp.Expand does: decimal, no leading zeros.
func groupNumber(ref string) (int, bool) {
	if len(ref) > 1 && ref[0] == '0' || len(ref) > 8 {
		return 0, false
	}
	num := 0
	for i := 0; i < len(ref); i++ {
		if ref[i] < '0' || ref[i] > '9' {
			return 0, false
		}
		num = num*10 + int(ref[i]-'0')
	}
	return num, true
}

// Fallback returns the principal for keys no rule matches.
func (r *Resolver) Fallback() Address { return r.fallback }

// Resolve returns the principal for sessionKey: that of the first matching
// rule, else the fallback. The empty key and keys longer than
// MaxSessionKeyLen give the fallback.
func (r *Resolver) Resolve(sessionKey string) Address {
	if sessionKey == "" || len(sessionKey) > MaxSessionKeyLen {
		return r.fallback
	}
	for i := range r.rules {
		c := &r.rules[i]
		switch c.mode {
		case ModeMap:
			if sessionKey == c.match {
				return c.static
			}
		case ModePrefix:
			if strings.HasPrefix(sessionKey, c.match) {
				return c.static
			}
		case ModeRegex:
			m := c.re.FindStringSubmatchIndex(sessionKey)
			if m == nil {
				continue
			}
			if c.template == "" {
				return c.static
			}
			name := SanitizeName(string(c.re.ExpandString(nil, c.template, sessionKey, m)))
			if name == "" {
				continue // nothing usable captured: as if the rule did not match
			}
			return Address{Kind: KindAgent, Name: name}
		}
	}
	return r.fallback
}

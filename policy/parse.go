package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tailscope/tailscope/internal/units"
	"go.yaml.in/yaml/v3"
)

// Limits of what a policy may say and of the files read. They are far above
// any real policy and keep the arithmetic and the parse bounded.
const (
	// MaxDuration is the longest duration a policy may give (a timeout,
	// the budget, a backoff): 1000h, about six weeks. int64 nanoseconds
	// hold about 2,562,047h; sums of timeouts, 100 retries and their
	// backoffs over a request's calls stay far below that, so the replay
	// cannot overflow. The duration flags of the command share it.
	MaxDuration = 1000 * time.Hour
	// MaxHops is the most hops one policy file may list.
	MaxHops = 100_000
	// MaxFileSize is the largest policy file read.
	MaxFileSize = 16 << 20
	// MaxEntries bounds the YAML parse: the YAML decoder keeps a node of
	// about 200 bytes for every key, value and list item, so a file of
	// nothing but tiny entries (a list of a million 1s, two bytes each)
	// would cost hundreds of megabytes. Before parsing, entries are
	// estimated by counting lines, commas, '[', '{' and the block
	// indicators "- " and "? "; a file with more is refused. A policy
	// written by recommend takes about 6 per hop, so this admits some
	// 40,000 hops (a hand-written one-line-per-hop file, 100,000), and
	// bounds the parse of the worst file to about 200 MB and 2 s (a
	// 1.3M-hop file took 2.25 GB and 24 s).
	MaxEntries = 250_000
	// maxMerged bounds the key/value pairs that merge keys (<<) may copy
	// in all, so that merges of merges cannot multiply.
	maxMerged = 4 * MaxEntries
	// maxProblems is how many problems Parse lists; more are counted.
	maxProblems = 100
	// echoLen is how much of a bad value a message quotes.
	echoLen = 64
)

// Load reads a policy file. A file larger than MaxFileSize is refused
// without reading it whole (a device like /dev/zero included).
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	// A deployed config (what recommend --emit writes, or the same kind
	// written by hand) is read as such; its routes become hops in check.
	if format := SniffConfig(data); format != "" {
		c, err := ReadConfig(path, format, data)
		if err != nil {
			return nil, err
		}
		return &Policy{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Path: path,
			Hops: map[string]Hop{}, Lines: map[string]int{}, Config: c}, nil
	}
	return Parse(path, data)
}

// LoadAll reads several policy files; when some cannot be read, the error
// lists the problems of every one of them, not only the first file's.
func LoadAll(paths []string) ([]*Policy, error) {
	var out []*Policy
	var problems []string
	for _, p := range paths {
		pol, err := Load(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, pol)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("bad policy file:\n%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

// Parse reads a policy from YAML or JSON. On mistakes it returns Problems
// listing all of them.
//
// The file is one YAML document holding a mapping. Aliases and merge keys
// (<<) work as YAML defines them: an alias stands for the node it names; a
// mapping's own keys win over merged ones, and of several merged mappings
// the first that has a key gives it. A key given twice in one mapping is
// a mistake (YAML forbids it), reported with both positions.
func Parse(path string, data []byte) (*Policy, error) {
	p := &Policy{
		Name:    strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		Path:    path,
		Default: Hop{},
		Hops:    map[string]Hop{},
		Lines:   map[string]int{},
	}
	if len(data) > MaxFileSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("larger than %d MiB: too big for a policy file", MaxFileSize>>20)}}
	}
	if n, line := entries(data); n > MaxEntries {
		return nil, Problems{{File: path, Line: line, Msg: fmt.Sprintf("more than %d entries (lines, list and mapping items): too big for a policy file", MaxEntries)}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{File: path, Msg: "empty policy file: want a mapping with budget, default and hops"}}
		}
		return nil, Problems{syntaxProblem(path, err)}
	}
	if pr, ok := laterDocument(path, dec); ok {
		return nil, Problems{pr}
	}
	ps := &parser{file: path, memo: map[*yaml.Node][]pair{}, visiting: map[*yaml.Node]bool{}}
	if len(doc.Content) == 0 {
		return nil, Problems{{File: path, Msg: "empty policy file: want a mapping with budget, default and hops"}}
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		msg := "want a mapping with budget, default and hops, found " + describe(root)
		if isNull(root) {
			msg = "empty policy file: want a mapping with budget, default and hops"
		}
		return nil, Problems{{File: path, Line: root.Line, Col: root.Column, Msg: msg}}
	}
	var hopsNode, defNode *yaml.Node
	for _, e := range ps.entries("", root) {
		k, v := e.k, e.v
		switch k.Value {
		case "budget":
			p.Budget = ps.duration(k.Value, v)
		case "default":
			defNode = v
		case "hops":
			hopsNode = v
		case "name":
			if v.Kind == yaml.ScalarNode && v.Value != "" {
				p.Name = v.Value
			}
		default:
			ps.add(k, clipName(k.Value), "unknown key (want budget, default, hops)")
		}
	}
	if defNode != nil {
		p.Default = ps.hop("default", defNode, Hop{})
	} else {
		p.Default = Hop{}
	}
	if hopsNode != nil {
		switch {
		case hopsNode.Kind == yaml.MappingNode:
			hops := ps.entries("hops", hopsNode)
			if len(hops) > MaxHops {
				ps.add(hopsNode, "hops", fmt.Sprintf("%d hops: a policy lists at most %d", len(hops), MaxHops))
				break
			}
			for _, e := range hops {
				k, v := e.k, e.v
				p.Hops[k.Value] = ps.hop("hops."+clipName(k.Value), v, p.Default)
				p.Lines[k.Value] = k.Line
			}
		case isNull(hopsNode):
		default:
			ps.add(hopsNode, "hops", "want a mapping of hop name to policy, found "+describe(hopsNode))
		}
	}
	if len(ps.probs) > 0 {
		// In file order, as a user fixes them.
		sort.SliceStable(ps.probs, func(i, j int) bool {
			a, b := ps.probs[i], ps.probs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		if n := len(ps.probs); n > maxProblems {
			ps.probs = append(ps.probs[:maxProblems], Problem{File: path, Msg: fmt.Sprintf("and %d more problems", n-maxProblems)})
		}
		return nil, ps.probs
	}
	return p, nil
}

// entries estimates the YAML nodes of data (see MaxEntries) and returns
// the line where the estimate passes the limit.
func entries(data []byte) (n, line int) {
	line = 1
	for i, c := range data {
		switch c {
		case '\n':
			if n++; n > MaxEntries {
				return n, line
			}
			line++
		case ',', '[', '{':
			n++
		case '-', '?':
			if i+1 == len(data) || data[i+1] == ' ' || data[i+1] == '\t' || data[i+1] == '\n' || data[i+1] == '\r' {
				n++
			}
		}
		if n > MaxEntries {
			return n, line
		}
	}
	return n, line
}

// laterDocument reports a second YAML document after the first: tailscope
// reads one, and silently ignoring the rest would check a policy other
// than the one written. An empty document (a trailing "---") is allowed.
func laterDocument(path string, dec *yaml.Decoder) (Problem, bool) {
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return Problem{}, false
		}
		if err != nil {
			pr := syntaxProblem(path, err)
			pr.Msg += " (in a second YAML document: a policy file holds one)"
			return pr, true
		}
		if len(doc.Content) == 0 || isNull(doc.Content[0]) && doc.Content[0].Value == "" {
			continue
		}
		n := doc.Content[0]
		return Problem{File: path, Line: n.Line, Col: n.Column,
			Msg: "a second YAML document: a policy file holds one (remove the '---' above it, or split the file)"}, true
	}
}

// syntaxProblem positions a YAML syntax error: the decoder says
// "yaml: line N: what"; the line moves into the position.
func syntaxProblem(path string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pr := Problem{File: path}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, e := strconv.Atoi(rest[:i]); e == nil {
				pr.Line, msg = n, rest[i+2:]
			}
		}
	}
	pr.Msg = "not valid YAML or JSON: " + clip(msg, 200)
	return pr
}

// deref resolves an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// isMerge reports whether a key is YAML's merge key: a plain <<, not a
// quoted "<<".
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Tag == "!!merge"
}

// describe names what a node is, for "want X, found Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return "the value " + echo(n.Value)
	}
	return "something else"
}

// echo quotes a value from the file for a message, cut to a readable
// length: a 50 MB bad string is not printed whole.
func echo(s string) string {
	if len(s) <= echoLen+16 {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, echoLen)+"…") + fmt.Sprintf(" (%d bytes)", len(s))
}

// clipName shortens a name from the file (a hop, a key) that goes into a
// problem's key path.
func clipName(s string) string {
	if len(s) <= echoLen+16 {
		return s
	}
	return cut(s, echoLen) + fmt.Sprintf("…(%d bytes)", len(s))
}

// clip shortens a message text to about n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, n) + "…"
}

// cut returns at most n bytes of s, not splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// pair is one key and value of a mapping, aliases resolved.
type pair struct{ k, v *yaml.Node }

type parser struct {
	file  string
	probs Problems
	// memo holds the resolved pairs of each mapping read, so that a
	// mapping merged in many places is resolved once; visiting catches a
	// mapping that merges itself.
	memo     map[*yaml.Node][]pair
	visiting map[*yaml.Node]bool
	merged   int // pairs copied by merge keys, against maxMerged
	tooMany  bool
}

func (ps *parser) add(n *yaml.Node, key, msg string) {
	ps.probs = append(ps.probs, Problem{File: ps.file, Line: n.Line, Col: n.Column, Key: key, Msg: msg})
}

// entries returns the key/value pairs of mapping n as YAML defines them:
// aliases resolved; merge keys (<<, a mapping or a list of mappings)
// expanded, the mapping's own keys first and winning, then the merged
// mappings' keys not yet given, the earlier mapping winning; a key given
// twice in the mapping itself reported with both positions. key is the
// path of n, for messages.
func (ps *parser) entries(key string, n *yaml.Node) []pair {
	if out, ok := ps.memo[n]; ok {
		return out
	}
	ps.visiting[n] = true
	defer delete(ps.visiting, n)
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	var out []pair
	var merges []*yaml.Node
	var mergeKey *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if isMerge(k) {
			if mergeKey != nil {
				ps.add(n.Content[i], path(key, "<<"), fmt.Sprintf("merge key given twice (first at %d:%d)", mergeKey.Line, mergeKey.Column))
				continue
			}
			mergeKey = n.Content[i]
			merges = ps.mergeSources(key, n.Content[i+1])
			continue
		}
		if k.Kind != yaml.ScalarNode {
			ps.add(n.Content[i], path(key, "?"), "want a name as key, found "+describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			what := "key given twice"
			if key == "hops" {
				what = "hop listed twice"
			}
			ps.add(n.Content[i], path(key, clipName(k.Value)), fmt.Sprintf("%s (first at %d:%d)", what, first.Line, first.Column))
			continue
		}
		seen[k.Value] = n.Content[i]
		out = append(out, pair{k, v})
	}
	for _, m := range merges {
		for _, e := range ps.entries(key, m) {
			if _, ok := seen[e.k.Value]; ok {
				continue
			}
			if ps.merged++; ps.merged > maxMerged {
				if !ps.tooMany {
					ps.tooMany = true
					ps.add(mergeKey, path(key, "<<"), fmt.Sprintf("merge keys copy more than %d entries: too big for a policy file", maxMerged))
				}
				break
			}
			seen[e.k.Value] = e.k
			out = append(out, e)
		}
	}
	ps.memo[n] = out
	return out
}

// mergeSources returns the mappings a merge key's value names: a mapping
// or a list of mappings (usually aliases).
func (ps *parser) mergeSources(key string, v *yaml.Node) []*yaml.Node {
	var list []*yaml.Node
	switch d := deref(v); d.Kind {
	case yaml.MappingNode:
		list = []*yaml.Node{v}
	case yaml.SequenceNode:
		list = d.Content
	default:
		ps.add(v, path(key, "<<"), "a merge key wants a mapping or a list of mappings, found "+describe(d))
		return nil
	}
	var out []*yaml.Node
	for _, x := range list {
		d := deref(x)
		switch {
		case d.Kind != yaml.MappingNode:
			ps.add(x, path(key, "<<"), "a merge key wants a mapping or a list of mappings, found "+describe(d)+" in the list")
		case ps.visiting[d]:
			ps.add(x, path(key, "<<"), "merges the mapping that holds it")
		default:
			out = append(out, d)
		}
	}
	return out
}

func path(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// hop reads a hop policy; fields not given inherit from base.
func (ps *parser) hop(key string, n *yaml.Node, base Hop) Hop {
	h := base
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		if isNull(n) {
			return h
		}
		ps.add(n, key, "want a mapping with timeout, retries, backoff, budget_aware, hedge, idempotent")
		return h
	}
	for _, e := range ps.entries(key, n) {
		k, v := e.k, e.v
		full := key + "." + clipName(k.Value)
		switch k.Value {
		case "timeout":
			h.Timeout = ps.duration(full, v)
		case "retries":
			h.Retries = ps.count(full, v)
		case "backoff":
			h.Backoff = ps.backoff(full, v)
		case "budget_aware":
			h.BudgetAware = ps.boolean(full, v)
		case "hedge":
			h.Hedge = ps.hedge(full, v)
		case "idempotent":
			n0 := len(ps.probs)
			if ps.boolean(full, v) {
				h.Idempotent = Idempotent
			} else if len(ps.probs) == n0 {
				h.Idempotent = NotIdempotent
			}
		default:
			ps.add(k, full, "unknown key (want timeout, retries, backoff, budget_aware, hedge, idempotent)")
		}
	}
	return h
}

// durationSyntax is a well-formed Go duration; one that time.ParseDuration
// still refuses is too long for int64 nanoseconds.
var durationSyntax = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

func (ps *parser) duration(key string, n *yaml.Node) time.Duration {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		ps.add(n, key, "want a duration like 3s or 800ms, found "+describe(n))
		return 0
	}
	s := strings.TrimSpace(n.Value)
	if s == "0" || strings.EqualFold(s, "none") {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		msg := fmt.Sprintf("bad duration %s: want a Go duration like 3s or 800ms", echo(n.Value))
		switch {
		case len(s) < 100 && durationSyntax.MatchString(s):
			msg = fmt.Sprintf("duration %s is too long: at most %s", echo(n.Value), units.GoDuration(MaxDuration))
		case len(s) < 100:
			if _, e := strconv.ParseFloat(s, 64); e == nil {
				msg = fmt.Sprintf("bad duration %s: give a unit, e.g. %ss or %sms", echo(n.Value), s, s)
			}
		}
		ps.add(n, key, msg)
		return 0
	}
	if d < 0 {
		ps.add(n, key, "negative duration "+clipName(s)) // s parsed: no odd characters
		return 0
	}
	if d > MaxDuration {
		ps.add(n, key, fmt.Sprintf("duration %s is too long: at most %s", echo(n.Value), units.GoDuration(MaxDuration)))
		return 0
	}
	return d
}

func (ps *parser) count(key string, n *yaml.Node) int {
	n = deref(n)
	v, err := strconv.Atoi(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil {
		if n.Kind != yaml.ScalarNode {
			ps.add(n, key, "want a whole number of retries, found "+describe(n))
		} else {
			ps.add(n, key, fmt.Sprintf("want a whole number of retries, got %s", echo(n.Value)))
		}
		return 0
	}
	if v < 0 {
		ps.add(n, key, fmt.Sprintf("negative retries %d", v))
		return 0
	}
	if v > 100 {
		ps.add(n, key, fmt.Sprintf("%d retries is not a policy (at most 100)", v))
		return 0
	}
	return v
}

func (ps *parser) boolean(key string, n *yaml.Node) bool {
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(strings.TrimSpace(n.Value)) {
		case "true", "yes", "on":
			return true
		case "false", "no", "off":
			return false
		}
		ps.add(n, key, fmt.Sprintf("want true or false, got %s", echo(n.Value)))
		return false
	}
	ps.add(n, key, "want true or false, found "+describe(n))
	return false
}

func (ps *parser) backoff(key string, n *yaml.Node) Backoff {
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		d := ps.duration(key, n)
		return Backoff{Base: d, Max: d}
	}
	if n.Kind != yaml.MappingNode {
		ps.add(n, key, "want a duration or {base, max, jitter}, found "+describe(n))
		return Backoff{}
	}
	var b Backoff
	var maxSet, bad bool // bad: base or max is wrong, so not compared
	for _, e := range ps.entries(key, n) {
		k, v := e.k, e.v
		full := key + "." + clipName(k.Value)
		switch k.Value {
		case "base":
			n0 := len(ps.probs)
			b.Base = ps.duration(full, v)
			bad = bad || len(ps.probs) > n0
		case "max":
			n0 := len(ps.probs)
			b.Max, maxSet = ps.duration(full, v), true
			bad = bad || len(ps.probs) > n0
		case "jitter":
			switch {
			case v.Kind != yaml.ScalarNode:
				ps.add(v, full, "want none, full or equal, found "+describe(v))
			case v.Value == JitterNone:
				b.Jitter = "" // the zero value means no jitter
			case v.Value == JitterFull, v.Value == JitterEqual:
				b.Jitter = v.Value
			default:
				ps.add(v, full, fmt.Sprintf("unknown jitter %s (want none, full, equal)", echo(v.Value)))
			}
		default:
			ps.add(k, full, "unknown key (want base, max, jitter)")
		}
	}
	if !maxSet {
		b.Max = b.Base
	}
	if b.Max < b.Base && !bad {
		ps.add(n, key+".max", fmt.Sprintf("max %s is below base %s", b.Max, b.Base))
	}
	if b.Base == 0 {
		// No base means no wait, whatever max and jitter say: normalise so
		// that the policy equals its written form (Marshal writes 0s).
		return Backoff{}
	}
	return b
}

// hedge reads {delay, max}: max defaults to DefaultHedgeMax; a delay of 0
// (or "none", or a null value) is no hedging.
func (ps *parser) hedge(key string, n *yaml.Node) Hedge {
	n = deref(n)
	if isNull(n) {
		return Hedge{}
	}
	if n.Kind == yaml.ScalarNode {
		if s := strings.TrimSpace(n.Value); s == "0" || strings.EqualFold(s, "none") {
			return Hedge{}
		}
	}
	if n.Kind != yaml.MappingNode {
		ps.add(n, key, "want {delay, max} (e.g. {delay: 50ms, max: 1}) or none, found "+describe(n))
		return Hedge{}
	}
	h := Hedge{Max: DefaultHedgeMax}
	delaySet := false
	for _, e := range ps.entries(key, n) {
		k, v := e.k, e.v
		full := key + "." + clipName(k.Value)
		switch k.Value {
		case "delay":
			h.Delay, delaySet = ps.duration(full, v), true
		case "max":
			m := deref(v)
			x, err := strconv.Atoi(strings.TrimSpace(m.Value))
			switch {
			case m.Kind != yaml.ScalarNode:
				ps.add(m, full, "want a whole number of extra attempts, found "+describe(m))
			case err != nil:
				ps.add(m, full, fmt.Sprintf("want a whole number of extra attempts, got %s", echo(m.Value)))
			case x < 1:
				ps.add(m, full, fmt.Sprintf("max %d: a hedge sends at least 1 extra attempt (set hedge: none for no hedging)", x))
			case x > MaxHedges:
				ps.add(m, full, fmt.Sprintf("max %d: at most %d extra attempts in flight", x, MaxHedges))
			default:
				h.Max = x
			}
		default:
			ps.add(k, full, "unknown key (want delay, max)")
		}
	}
	if !delaySet {
		ps.add(n, key+".delay", "missing: a hedge needs the delay after which it sends another attempt")
	}
	if h.Delay == 0 {
		return Hedge{}
	}
	return h
}

package meridian

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// regexShape is what the cost model knows of a regex check's pattern: the shape of the
// program Go's regexp runs on each value (regexp/syntax), analysed once when the check is
// compiled. Go's regexp is linear in the input, but each input rune costs one step of every
// thread alive at that point, and a program can keep up to one thread per instruction
// alive: `[a-z]{1000}x` on a run of 300,000 letters steps about 1,000 threads per letter
// (about 12 µs a letter), `^[a-z]+$` one (about 9 ns). The shape bounds the threads of the
// worst input of each length, so the estimate holds whatever the values hold.
type regexShape struct {
	// insts is the number of instructions of the program; above maxBacktrackProg Go never
	// uses its backtracker.
	insts int
	// threads is the weighted number of threads alive at one step of the worst input
	// (a consuming instruction weighs 1, an empty-width one regexEmptyWeight); for an
	// anchored pattern whose threads all end within steps runes, the average over those
	// steps.
	threads float64
	// steps is the most runes an anchored match attempt reads before every thread has
	// ended; -1 when unbounded (a loop, or a pattern that is not anchored).
	steps int
	// minLen is the length below which regexp rejects a value without running (minInputLen).
	minLen int
	// onepass reports that Go runs the pattern with its one-pass engine (anchored and
	// unambiguous).
	onepass bool
	// literal reports that the pattern is a plain string, found with bytes.Index.
	literal bool
}

// Limits of Go's regexp (regexp/backtrack.go): the backtracker runs programs of at most
// maxBacktrackProg instructions on inputs shorter than maxBacktrackVector / instructions
// bytes; longer inputs and larger programs run on the NFA simulation.
const (
	maxBacktrackProg   = 500
	maxBacktrackVector = 256 * 1024
)

// Work bounds of the analysis of one pattern, in instruction visits (a class of many ranges
// counts more): the exact search of the sets of instructions a pattern's threads can occupy
// stops at regexExactBudget and the cruder bound by depth at regexLayerBudget, about 1 ms
// and 4 ms at most; beyond both, every instruction of the program counts as alive at every
// step (the bound of Go's NFA).
const (
	regexExactBudget = 1 << 16
	regexLayerBudget = 1 << 17
)

// maxRepresentatives bounds the runes the analysis tries at each state (one per boundary
// of the program's character classes).
const maxRepresentatives = 256

// analyzeRegex returns the shape of the program regexp.Compile builds for pattern (which
// compiled). The analysis follows regexp: syntax.Perl, Simplify, syntax.Compile.
func analyzeRegex(pattern string) regexShape {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return regexShape{insts: 1, threads: 1, steps: -1}
	}
	re = re.Simplify()
	prog, err := syntax.Compile(re)
	if err != nil {
		return regexShape{insts: 1, threads: 1, steps: -1}
	}
	s := regexShape{insts: len(prog.Inst), steps: -1, minLen: minInputLen(re)}
	anchored := prog.StartCond()&syntax.EmptyBeginText != 0
	if prefix, complete := prog.Prefix(); complete && prefix != "" && !anchored {
		s.literal = true
		return s
	}
	x := newThreadExplorer(prog)
	if !x.exact(&s, anchored) && !x.layered(&s, anchored) {
		s.threads = x.weightOfAll()
		s.steps = -1
	}
	return s
}

// consumes reports whether op reads a rune of the input.
func consumes(op syntax.InstOp) bool {
	switch op {
	case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		return true
	}
	return false
}

// threadExplorer searches the sets of instructions a program's threads can occupy at once.
type threadExplorer struct {
	prog  *syntax.Prog
	reps  []rune   // one rune of each class of runes the program tells apart
	mark  []uint32 // mark[pc] == gen: pc is in the set being built
	gen   uint32
	stack []uint32
	work  int
	start []uint32 // the closure of the program's start
}

func newThreadExplorer(prog *syntax.Prog) *threadExplorer {
	x := &threadExplorer{prog: prog, mark: make([]uint32, len(prog.Inst)), reps: representatives(prog)}
	x.gen++
	x.start = x.closure(nil, uint32(prog.Start))
	return x
}

// closure appends to set the instructions reachable from pc without reading input, each
// once per generation.
func (x *threadExplorer) closure(set []uint32, pc uint32) []uint32 {
	x.stack = append(x.stack[:0], pc)
	for len(x.stack) > 0 {
		pc := x.stack[len(x.stack)-1]
		x.stack = x.stack[:len(x.stack)-1]
		if x.mark[pc] == x.gen {
			continue
		}
		x.mark[pc] = x.gen
		x.work++
		in := &x.prog.Inst[pc]
		set = append(set, pc)
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			x.stack = append(x.stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
			// Empty-width assertions are taken as satisfied: the bound covers every input.
			x.stack = append(x.stack, in.Out)
		}
	}
	return set
}

// step appends to dst (in the current generation) where the threads of set go on reading r.
// A rune class of many ranges counts as more work (its test is a search of them).
func (x *threadExplorer) step(dst, set []uint32, r rune) []uint32 {
	for _, pc := range set {
		in := &x.prog.Inst[pc]
		x.work += 1 + len(in.Rune)/16
		if consumes(in.Op) && in.MatchRune(r) {
			dst = x.closure(dst, in.Out)
		}
	}
	return dst
}

// ambiguous reports whether two threads of set read r.
func (x *threadExplorer) ambiguous(set []uint32, r rune) bool {
	n := 0
	for _, pc := range set {
		if in := &x.prog.Inst[pc]; consumes(in.Op) && in.MatchRune(r) {
			n++
		}
	}
	return n > 1
}

func (x *threadExplorer) weight(set []uint32) float64 {
	w := 0.0
	for _, pc := range set {
		if consumes(x.prog.Inst[pc].Op) {
			w++
		} else {
			w += regexEmptyWeight
		}
	}
	return w
}

func (x *threadExplorer) weightOfAll() float64 {
	w := 0.0
	for pc := range x.prog.Inst {
		if consumes(x.prog.Inst[pc].Op) {
			w++
		} else {
			w += regexEmptyWeight
		}
	}
	return w
}

// exact explores every set of threads the program can reach (one node per set; an
// unanchored program's start joins every step) and sets the heaviest. For an anchored
// program whose sets form no cycle it sets the heaviest path instead, over its length. It
// returns false when the work exceeds regexExactBudget.
func (x *threadExplorer) exact(s *regexShape, anchored bool) bool {
	type node struct {
		set    []uint32 // anchored: the threads; unanchored: the threads beyond the start
		weight float64
		next   []int
	}
	inStart := make([]bool, len(x.prog.Inst))
	for _, pc := range x.start {
		inStart[pc] = true
	}
	startWeight := x.weight(x.start)
	var fromStart [][]uint32 // unanchored: where the start's threads go on each representative
	if !anchored {
		fromStart = make([][]uint32, len(x.reps))
		for i, r := range x.reps {
			x.gen++
			fromStart[i] = x.step(nil, x.start, r)
		}
	}
	ids := map[string]int{}
	var nodes []node
	var key []byte
	intern := func(set []uint32) (int, bool) {
		slices.Sort(set)
		key = key[:0]
		for _, pc := range set {
			key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
		}
		if id, ok := ids[string(key)]; ok {
			return id, false
		}
		w := x.weight(set)
		if !anchored {
			w = startWeight
			for _, pc := range set {
				if !inStart[pc] {
					w += x.weight([]uint32{pc})
				}
			}
		}
		ids[string(key)] = len(nodes)
		nodes = append(nodes, node{set: slices.Clone(set), weight: w})
		return len(nodes) - 1, true
	}
	first := []uint32{}
	if anchored {
		first = slices.Clone(x.start)
	}
	intern(first)
	unambiguous := true
	var buf []uint32
	for queue := []int{0}; len(queue) > 0; queue = queue[1:] {
		id := queue[0]
		for i, r := range x.reps {
			if anchored && unambiguous && x.ambiguous(nodes[id].set, r) {
				unambiguous = false
			}
			x.gen++
			next := x.step(buf[:0], nodes[id].set, r)
			if !anchored {
				for _, pc := range fromStart[i] {
					if x.mark[pc] != x.gen {
						x.mark[pc] = x.gen
						next = append(next, pc)
					}
				}
			}
			buf = next
			if len(next) == 0 {
				continue
			}
			nid, fresh := intern(next)
			nodes[id].next = append(nodes[id].next, nid)
			if fresh {
				queue = append(queue, nid)
			}
			if x.work > regexExactBudget {
				return false
			}
		}
	}
	for _, n := range nodes {
		s.threads = max(s.threads, n.weight)
	}
	if !anchored {
		return true
	}
	s.onepass = unambiguous && onepassShape(x.prog)
	// Heaviest path from the first node; a cycle leaves the run unbounded.
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]uint8, len(nodes))
	heavy := make([]float64, len(nodes))
	length := make([]int, len(nodes))
	cyclic := false
	var visit func(v int)
	visit = func(v int) {
		state[v] = onPath
		heavy[v], length[v] = nodes[v].weight, 1
		for _, w := range nodes[v].next {
			switch state[w] {
			case onPath:
				cyclic = true
				continue
			case unvisited:
				visit(w)
			}
			if nodes[v].weight+heavy[w] > heavy[v] {
				heavy[v], length[v] = nodes[v].weight+heavy[w], 1+length[w]
			}
		}
		state[v] = done
	}
	visit(0)
	if !cyclic {
		s.steps = length[0]
		s.threads = heavy[0] / float64(length[0])
	}
	return true
}

// layered bounds the threads depth by depth, forgetting which runes led to a depth: the
// threads alive at depth k are at most the widest move of all depth-(k−1) instructions on
// one rune. It returns false when the depths do not end within the program's size (a
// loop) or the work exceeds regexLayerBudget.
func (x *threadExplorer) layered(s *regexShape, anchored bool) bool {
	layer := slices.Clone(x.start)
	total := x.weight(layer)
	all := x.weightOfAll()
	depth := 1
	for ; len(layer) > 0; depth++ {
		if depth > len(x.prog.Inst) || total >= all || x.work > regexLayerBudget {
			return false
		}
		widest := 0.0
		var union []uint32
		for _, r := range x.reps {
			x.gen++
			next := x.step(nil, layer, r)
			widest = max(widest, x.weight(next))
			union = append(union, next...)
		}
		slices.Sort(union)
		layer = slices.Compact(union)
		total += widest
	}
	s.threads = min(total, all)
	if anchored {
		s.steps = depth - 1
		s.threads = total / float64(depth-1)
	}
	return true
}

// representatives returns one rune of each class of runes the program's instructions tell
// apart: the bounds of every range and the runes just outside them.
func representatives(prog *syntax.Prog) []rune {
	reps := []rune{0, '\n', 'a', unicode.MaxRune}
	add := func(r rune) {
		if r >= 0 && r <= unicode.MaxRune {
			reps = append(reps, r)
		}
	}
	// A class repeated by a repetition (`[\p{L}]{100}`) is read once.
	type class struct {
		first, last rune
		n           int
	}
	seen := map[class]bool{}
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRune1:
			add(in.Rune[0])
		case syntax.InstRune:
			if k := (class{in.Rune[0], in.Rune[len(in.Rune)-1], len(in.Rune)}); len(in.Rune) > 2 {
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			if len(in.Rune) == 1 {
				add(in.Rune[0])
				if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
					for f := unicode.SimpleFold(in.Rune[0]); f != in.Rune[0]; f = unicode.SimpleFold(f) {
						add(f)
					}
				}
				continue
			}
			for i := 0; i+1 < len(in.Rune); i += 2 {
				add(in.Rune[i] - 1)
				add(in.Rune[i])
				add(in.Rune[i+1])
				add(in.Rune[i+1] + 1)
			}
		}
	}
	slices.Sort(reps)
	reps = slices.Compact(reps)
	if len(reps) > maxRepresentatives {
		// Keep an even sample: the bound may miss a class, never the whole alphabet.
		sample := make([]rune, 0, maxRepresentatives)
		for i := range maxRepresentatives {
			sample = append(sample, reps[i*len(reps)/maxRepresentatives])
		}
		reps = sample
	}
	return reps
}

// minInputLen is regexp's: the fewest bytes any match reads (regexp/regexp.go).
func minInputLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpCharClass:
		return 1
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if r == utf8.RuneError {
				n++
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n
	case syntax.OpCapture, syntax.OpPlus:
		return minInputLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minInputLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minInputLen(sub)
		}
		return n
	case syntax.OpAlternate:
		n := minInputLen(re.Sub[0])
		for _, sub := range re.Sub[1:] {
			n = min(n, minInputLen(sub))
		}
		return n
	}
	return 0
}

// onepassShape checks the conditions on a program's start and matches that regexp's
// one-pass compiler requires (regexp/onepass.go, compileOnePass); exact adds that no state
// lets two threads read the same rune.
func onepassShape(prog *syntax.Prog) bool {
	if prog.Start == 0 || len(prog.Inst) >= 1000 {
		return false
	}
	first := prog.Inst[prog.Start]
	if first.Op != syntax.InstEmptyWidth || syntax.EmptyOp(first.Arg)&syntax.EmptyBeginText == 0 {
		return false
	}
	hasAlt := slices.ContainsFunc(prog.Inst, func(in syntax.Inst) bool {
		return in.Op == syntax.InstAlt || in.Op == syntax.InstAltMatch
	})
	for _, in := range prog.Inst {
		out := prog.Inst[in.Out].Op
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			if out == syntax.InstMatch || prog.Inst[in.Arg].Op == syntax.InstMatch {
				return false
			}
		case syntax.InstEmptyWidth:
			if out == syntax.InstMatch && syntax.EmptyOp(in.Arg)&syntax.EmptyEndText == 0 {
				return false
			}
		default:
			if out == syntax.InstMatch && hasAlt {
				return false
			}
		}
	}
	return true
}

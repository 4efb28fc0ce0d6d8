package keyspace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestScriptsTakeKeysInKEYS reads every Lua script of the repository (each
// redis.NewScript in a non-test Go file) and fails on any redis.call whose
// key argument is not passed in KEYS: a key concatenated in Lua (`ns ..
// 'acct:' .. id`), taken from ARGV, or read from another key's value. On
// a Redis Cluster a script may touch only the keys it declares, so every
// key must come from KEYS[i], from a local bound only to KEYS entries, or
// from a parameter of a local function whose every call passes such.
func TestScriptsTakeKeysInKEYS(t *testing.T) {
	scripts := repoScripts(t)
	if len(scripts) < 40 {
		t.Fatalf("found only %d scripts: is the repository walk broken?", len(scripts))
	}
	for _, s := range scripts {
		for _, bad := range undeclaredKeys(s.src) {
			t.Errorf("%s: %s", s.pos, bad)
		}
	}
}

// TestUndeclaredKeysFound: the checker itself finds each way a script can
// build a key outside KEYS, and accepts the ways it can take one from KEYS.
func TestUndeclaredKeysFound(t *testing.T) {
	for _, c := range []struct {
		name, src string
		bad       int
	}{
		{"concatenated", `redis.call('HGET', ARGV[1] .. 'acct:' .. id, 'x')`, 1},
		{"from ARGV", `redis.call('DEL', ARGV[2])`, 1},
		{"derived from KEYS", `redis.call('SET', KEYS[1] .. ':keys', 1)`, 1},
		{"local prefix", "local ns = ARGV[1]\nredis.call('SADD', ns .. 'watches', 1)", 1},
		{"local key built", "local k = ARGV[4] .. id\nredis.call('HGET', k, 'status')", 1},
		{"second key of RENAME", `redis.call('RENAME', KEYS[1], KEYS[1] .. ':co')`, 1},
		{"every key of DEL", `redis.call('DEL', KEYS[1], 'x')`, 1},
		{"read from a value", `redis.call('EXISTS', redis.call('GET', KEYS[1]))`, 1},
		{"function called with a built key", "local function f(k) return redis.call('GET', k) end\nf(ARGV[1] .. 'x')", 1},
		{"KEYS", `redis.call('HSET', KEYS[2], 'a', ARGV[1] .. 'b')`, 0},
		{"local bound to KEYS", "local k = KEYS[3]\nredis.call('GET', k)", 0},
		{"loop over KEYS", "for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end", 0},
		{"ipairs KEYS", "for _, k in ipairs(KEYS) do redis.call('DEL', k) end", 0},
		{"ipairs of KEYS entries", "for i, k in ipairs({KEYS[7], KEYS[8]}) do redis.call('GET', k) end", 0},
		{"KEYS entries indexed", "local k = ({KEYS[3], KEYS[4]})[i]\nredis.call('GET', k)", 0},
		{"ipairs of a built table", "for i, k in ipairs({KEYS[7], ARGV[1]}) do redis.call('GET', k) end", 1},
		{"unpack KEYS", "redis.call('DEL', unpack(KEYS, 2))", 0},
		{"function given KEYS", "local function f(k) return redis.call('GET', k) end\nf(KEYS[1])", 0},
		{"SINTERCARD", "redis.call('SINTERCARD', 2, KEYS[4], KEYS[2])", 0},
		{"TIME", "redis.call('TIME')", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := undeclaredKeys(c.src); len(got) != c.bad {
				t.Errorf("found %d undeclared keys, want %d: %q", len(got), c.bad, got)
			}
		})
	}
}

type script struct {
	pos string
	src string
}

// repoScripts returns the Lua source of every redis.NewScript call in the
// repository's non-test Go files, string constants (limit.GCRALua)
// resolved by name.
func repoScripts(t *testing.T) []script {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "NewScript") && !strings.Contains(string(b), "Lua") {
			return err
		}
		f, err := parser.ParseFile(fset, p, b, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]ast.Expr{} // "pkg.Name" -> value
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							consts[f.Name.Name+"."+n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var eval func(pkg string, e ast.Expr) string
	eval = func(pkg string, e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(e.Pos()), err)
			}
			return s
		case *ast.BinaryExpr:
			return eval(pkg, e.X) + eval(pkg, e.Y)
		case *ast.ParenExpr:
			return eval(pkg, e.X)
		case *ast.Ident:
			if v, ok := consts[pkg+"."+e.Name]; ok {
				return eval(pkg, v)
			}
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				if v, ok := consts[x.Name+"."+e.Sel.Name]; ok {
					return eval(x.Name, v)
				}
			}
		}
		t.Fatalf("%s: a script's source is not a string constant", fset.Position(e.Pos()))
		return ""
	}
	var out []script
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) != 1 {
				return true
			}
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewScript" {
				p := fset.Position(c.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				out = append(out, script{pos: rel + ":" + strconv.Itoa(p.Line), src: eval(f.Name.Name, c.Args[0])})
			}
			return true
		})
	}
	return out
}

// keyArgs says which arguments (0-based, after the command) of a command
// are keys: all of them, the first n, or (SINTERCARD, ZUNIONSTORE...) a
// count then keys. The rest take one key, first; those listed with 0 none.
var keyArgs = map[string]int{
	"DEL": -1, "UNLINK": -1, "EXISTS": -1, "MGET": -1, "TOUCH": -1,
	"SINTER": -1, "SUNION": -1, "SDIFF": -1, "SINTERSTORE": -1, "SUNIONSTORE": -1, "SDIFFSTORE": -1,
	"RENAME": 2, "RENAMENX": 2, "SMOVE": 2, "LMOVE": 2, "RPOPLPUSH": 2, "COPY": 2,
	"TIME": 0, "INFO": 0,
}

var (
	callRe   = regexp.MustCompile(`redis\.p?call\s*\(`)
	funcRe   = regexp.MustCompile(`local\s+function\s+([A-Za-z_]\w*)\s*\(([^)]*)\)`)
	assignRe = regexp.MustCompile(`(?m)(?:^|[;\s])(local\s+)?([A-Za-z_][\w \t,]*?)\s*=\s*([^=\n][^\n]*)`)
	// keysTable is a table constructor of KEYS entries alone.
	keysTable = `\{\s*KEYS\[[^\]]+\](\s*,\s*KEYS\[[^\]]+\])*\s*\}`
	forInRe   = regexp.MustCompile(`for\s+([\w\s,]+?)\s+in\s+([^\n]*?)\s+do`)
	keysOnly  = regexp.MustCompile(`^(KEYS\[[^\]]+\]|unpack\(KEYS\b.*\)|\(` + keysTable + `\)\[\w+\])$`)
	keysLoop  = regexp.MustCompile(`^ipairs\((KEYS|` + keysTable + `)\)$`)
)

// undeclaredKeys returns a line per key argument of src's redis calls not
// taken from KEYS.
func undeclaredKeys(src string) []string {
	src = stripComments(src)
	params := map[string]bool{}
	for _, m := range funcRe.FindAllStringSubmatch(src, -1) {
		for _, p := range strings.Split(m[2], ",") {
			params[strings.TrimSpace(p)] = true
		}
	}
	// Every expression bound to each name; loop variables over KEYS bind
	// KEYS entries.
	bound := map[string][]string{}
	for _, m := range forInRe.FindAllStringSubmatch(src, -1) {
		names := splitTop(m[1])
		v := "?"
		if keysLoop.MatchString(strings.TrimSpace(m[2])) {
			v = "KEYS[i]"
		}
		for _, n := range names[1:] {
			bound[n] = append(bound[n], v)
		}
		if len(names) == 1 {
			bound[names[0]] = append(bound[names[0]], v)
		}
	}
	for _, m := range assignRe.FindAllStringSubmatch(src, -1) {
		names := splitTop(m[2])
		if len(names) == 0 || names[0] == "function" || strings.HasPrefix(names[0], "for ") {
			continue
		}
		vals := splitTop(m[3])
		for i, n := range names {
			n = strings.TrimPrefix(n, "for ")
			v := "?"
			if i < len(vals) {
				v = vals[i]
			}
			bound[n] = append(bound[n], v)
		}
	}
	// Numeric for loops bind numbers, never keys.
	for _, m := range regexp.MustCompile(`for\s+(\w+)\s*=`).FindAllStringSubmatch(src, -1) {
		delete(bound, m[1])
		bound[m[1]] = []string{"0"}
	}
	var ok func(e string, depth int) bool
	ok = func(e string, depth int) bool {
		e = strings.TrimSpace(e)
		if keysOnly.MatchString(e) {
			return true
		}
		if depth > 5 || strings.Contains(e, "..") || strings.Contains(e, "ARGV") || strings.Contains(e, "(") {
			return false
		}
		if regexp.MustCompile(`^[A-Za-z_]\w*$`).MatchString(e) {
			vals, isBound := bound[e]
			if !isBound {
				return params[e]
			}
			for _, v := range vals {
				if !ok(v, depth+1) {
					return false
				}
			}
			return true
		}
		return false
	}
	var bad []string
	check := func(what, e string) {
		if !ok(e, 0) {
			bad = append(bad, what+" takes key "+strings.TrimSpace(e)+", not from KEYS")
		}
	}
	for _, loc := range callRe.FindAllStringIndex(src, -1) {
		args := splitTop(argsAt(src, loc[1]))
		if len(args) == 0 {
			continue
		}
		cmd, err := strconv.Unquote(strings.ReplaceAll(args[0], "'", `"`))
		if err != nil {
			bad = append(bad, "a redis call with a command that is not a literal: "+args[0])
			continue
		}
		cmd = strings.ToUpper(cmd)
		args = args[1:]
		n, listed := keyArgs[cmd]
		switch {
		case cmd == "SINTERCARD" || cmd == "ZUNIONSTORE" || cmd == "ZINTERSTORE":
			first := 0
			if cmd != "SINTERCARD" {
				check(cmd, args[0])
				first = 1
			}
			k, _ := strconv.Atoi(strings.TrimSpace(args[first]))
			for _, a := range args[first+1 : min(len(args), first+1+k)] {
				check(cmd, a)
			}
		case !listed:
			if len(args) > 0 {
				check(cmd, args[0])
			}
		case n < 0:
			for _, a := range args {
				check(cmd, a)
			}
		default:
			for _, a := range args[:min(n, len(args))] {
				check(cmd, a)
			}
		}
	}
	// A local function's key parameters: every call passes a key from KEYS.
	for _, m := range funcRe.FindAllStringSubmatch(src, -1) {
		ps := splitTop(m[2])
		body := src
		used := map[int]bool{}
		for i, p := range ps {
			if regexp.MustCompile(`redis\.p?call\s*\(\s*'[A-Za-z]+'\s*,\s*` + regexp.QuoteMeta(p) + `\b`).MatchString(body) {
				used[i] = true
			}
		}
		for _, loc := range regexp.MustCompile(`\b`+m[1]+`\s*\(`).FindAllStringIndex(src, -1) {
			if strings.HasSuffix(strings.TrimSpace(src[:loc[0]]), "function") {
				continue
			}
			args := splitTop(argsAt(src, loc[1]))
			for i := range used {
				if i < len(args) {
					check(m[1], args[i])
				}
			}
		}
	}
	return bad
}

// argsAt returns the text from i (just after an opening parenthesis) to
// its closing one.
func argsAt(src string, i int) string {
	depth := 1
	for j := i; j < len(src); j++ {
		switch c := src[j]; c {
		case '\'', '"':
			j = skipString(src, j)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return src[i:j]
			}
		}
	}
	return src[i:]
}

// splitTop splits s at its top-level commas.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for j := 0; j < len(s); j++ {
		switch c := s[j]; c {
		case '\'', '"':
			j = skipString(s, j)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:j]))
				start = j + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" {
		out = append(out, last)
	}
	return out
}

// skipString returns the index of the quote closing the string opened at i.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' {
			j++
		} else if s[j] == q {
			return j
		}
	}
	return len(s)
}

// stripComments drops Lua line comments (-- to the end of the line).
func stripComments(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		for j := 0; j+1 < len(l); j++ {
			if l[j] == '\'' || l[j] == '"' {
				j = skipString(l, j)
			} else if l[j] == '-' && l[j+1] == '-' {
				lines[i] = l[:j]
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

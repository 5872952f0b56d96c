package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The manifests are checked against what the riskapi binary really does, read from its
// source as text: this module does not depend on the main one, so `go test ./...` at the
// repository root stays free of Kubernetes modules and this test builds none of riskapi.

// repoRoot is the main module's directory, the parent of deploy/.
const repoRoot = ".."

// mainModule is the main module's path, the prefix of its own imports.
const mainModule = "riskapi"

// binary is what the manifests are checked against, all of it read from the source.
type binary struct {
	// envVars are the RISKAPI_* names the binary's packages mention outside tests.
	envVars map[string]bool
	// envDefaults are the defaults of the settings cmd/riskapi reads with
	// envOr(getenv, NAME, DEFAULT), such as RISKAPI_ADDR's "127.0.0.1:8080".
	envDefaults map[string]string
	// commands are the subcommands `riskapi COMMAND` accepts (the cases of run's switch).
	commands map[string]bool
	// routes maps each handler constructor of internal/httpapi's routes to its pattern,
	// e.g. "handleHealth" to "GET /healthz".
	routes map[string]string
	// readyTimeout bounds the store check of /readyz.
	readyTimeout time.Duration
}

var envVarName = regexp.MustCompile(`^RISKAPI_[A-Z0-9_]+$`)

// readBinary parses cmd/riskapi and every package of the main module it imports, directly
// or not, so envVars holds exactly the names the binary can read (test helpers' variables,
// such as RISKAPI_TEST_POSTGRES_URL, live in packages the binary does not import).
func readBinary(t *testing.T) *binary {
	t.Helper()
	b := &binary{
		envVars:     map[string]bool{},
		envDefaults: map[string]string{},
		commands:    map[string]bool{},
		routes:      map[string]string{},
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	queue := []string{mainModule + "/cmd/riskapi"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		for _, file := range parsePackage(t, fset, pkg) {
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, mainModule+"/") {
					queue = append(queue, path)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && envVarName.MatchString(s) {
						b.envVars[s] = true
					}
				}
				return true
			})
			switch pkg {
			case mainModule + "/cmd/riskapi":
				b.readCommand(file)
			case mainModule + "/internal/httpapi":
				b.readRoutes(file)
			}
		}
	}
	if len(b.envVars) == 0 || len(b.commands) == 0 || len(b.routes) == 0 || b.readyTimeout == 0 {
		t.Fatalf("could not read the binary's settings from its source: %d variables, %d commands, %d routes, ready timeout %v",
			len(b.envVars), len(b.commands), len(b.routes), b.readyTimeout)
	}
	return b
}

// parsePackage parses the non-test Go files of one of the main module's packages.
func parsePackage(t *testing.T, fset *token.FileSet, pkg string) []*ast.File {
	t.Helper()
	dir := filepath.Join(repoRoot, filepath.FromSlash(strings.TrimPrefix(pkg, mainModule+"/")))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("package %s: %v", pkg, err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		files = append(files, f)
	}
	return files
}

// readCommand collects envOr defaults and the cases of func run's switch.
func (b *binary) readCommand(file *ast.File) {
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "envOr" && len(call.Args) == 3 {
			name, okName := stringLit(call.Args[1])
			value, okValue := stringLit(call.Args[2])
			if okName && okValue {
				b.envDefaults[name] = value
			}
		}
		return true
	})
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "run" || fn.Recv != nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if clause, ok := n.(*ast.CaseClause); ok {
				for _, e := range clause.List {
					if s, ok := stringLit(e); ok {
						b.commands[s] = true
					}
				}
			}
			return true
		})
	}
}

// readRoutes collects s.handle("METHOD /path", constructor()) calls and the readyTimeout
// constant.
func (b *binary) readRoutes(file *ast.File) {
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "handle" || len(n.Args) != 2 {
				return true
			}
			pattern, ok := stringLit(n.Args[0])
			handler, isCall := n.Args[1].(*ast.CallExpr)
			if !ok || !isCall {
				return true
			}
			switch fn := handler.Fun.(type) {
			case *ast.Ident:
				b.routes[fn.Name] = pattern
			case *ast.SelectorExpr:
				b.routes[fn.Sel.Name] = pattern
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if name.Name == "readyTimeout" && i < len(n.Values) {
					b.readyTimeout = durationExpr(n.Values[i])
				}
			}
		}
		return true
	})
}

// routePath is the path of the route whose handler constructor is named handler.
func (b *binary) routePath(t *testing.T, handler string) string {
	t.Helper()
	pattern, ok := b.routes[handler]
	if !ok {
		t.Fatalf("internal/httpapi registers no route for %s", handler)
	}
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || method != "GET" {
		t.Fatalf("route %q of %s: want a GET pattern", pattern, handler)
	}
	return path
}

// setting is the value a setting has in the pod: the ConfigMap's, else the binary's default.
func (b *binary) setting(t *testing.T, config map[string]string, name string) string {
	t.Helper()
	if v, ok := config[name]; ok {
		return v
	}
	v, ok := b.envDefaults[name]
	if !ok {
		t.Fatalf("%s is neither in the ConfigMap nor read with a default by cmd/riskapi", name)
	}
	return v
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// durationExpr evaluates N * time.Unit (or time.Unit alone); 0 for anything else.
func durationExpr(e ast.Expr) time.Duration {
	units := map[string]time.Duration{
		"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
	}
	switch e := e.(type) {
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" {
			return units[e.Sel.Name]
		}
	case *ast.BinaryExpr:
		if e.Op != token.MUL {
			return 0
		}
		lit, ok := e.X.(*ast.BasicLit)
		if !ok || lit.Kind != token.INT {
			return 0
		}
		n, err := strconv.Atoi(lit.Value)
		if err != nil {
			return 0
		}
		return time.Duration(n) * durationExpr(e.Y)
	}
	return 0
}

// listenPort is the port of a listen address such as "127.0.0.1:8080" or ":8080".
func listenPort(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		t.Fatalf("listen address %q has no port", addr)
	}
	port, err := strconv.ParseInt(addr[i+1:], 10, 32)
	if err != nil || port < 1 || port > 65535 {
		t.Fatalf("listen address %q: port %q is not a port number", addr, addr[i+1:])
	}
	return int32(port)
}

// seconds parses a Go duration setting into whole seconds, rounded up.
func seconds(t *testing.T, name, value string) int64 {
	t.Helper()
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, value)
	}
	return int64((d + time.Second - 1) / time.Second)
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadBinary(t *testing.T) {
	b := readBinary(t)
	for _, want := range []string{"RISKAPI_ADDR", "RISKAPI_DATABASE_URL", "RISKAPI_REDIS_URL", "RISKAPI_SECRET_KEY", "RISKAPI_RATE_LIMIT_PROCESSES"} {
		if !b.envVars[want] {
			t.Errorf("the binary's source does not mention %s", want)
		}
	}
	for name := range b.envVars {
		if strings.HasPrefix(name, "RISKAPI_TEST_") {
			t.Errorf("%s, a test variable, was found in a package the binary imports", name)
		}
	}
	if got := b.envDefaults["RISKAPI_ADDR"]; listenPort(t, got) == 0 {
		t.Errorf("RISKAPI_ADDR default %q", got)
	}
	for _, cmd := range []string{"serve", "migrate", "version"} {
		if !b.commands[cmd] {
			t.Errorf("run has no %q command; found %v", cmd, b.commands)
		}
	}
}

package deploy

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerfile is the repository's Dockerfile, instruction by instruction (continuation lines
// joined, comments dropped).
type dockerfile []instruction

type instruction struct{ keyword, args string }

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var out dockerfile
	var pending string
	for _, line := range strings.Split(readText(t, "Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && pending == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, "\\"); ok {
			pending += cont + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		keyword, args, _ := strings.Cut(full, " ")
		out = append(out, instruction{strings.ToUpper(keyword), strings.TrimSpace(args)})
	}
	return out
}

// finalStage is the instructions after the last FROM: what the image is.
func (d dockerfile) finalStage() dockerfile {
	last := 0
	for i, in := range d {
		if in.keyword == "FROM" {
			last = i
		}
	}
	return d[last:]
}

func (d dockerfile) all(keyword string) []string {
	var args []string
	for _, in := range d {
		if in.keyword == keyword {
			args = append(args, in.args)
		}
	}
	return args
}

func TestDockerfile(t *testing.T) {
	d, b := readDockerfile(t), readBinary(t)

	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readText(t, "go.mod"))
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	if args := d.all("ARG"); !slices.Contains(args, "GO_VERSION="+goLine[1]) {
		t.Errorf("the Dockerfile's ARGs %q do not pin GO_VERSION=%s, go.mod's Go", args, goLine[1])
	}
	froms := d.all("FROM")
	if len(froms) < 2 || !strings.Contains(froms[0], "golang:${GO_VERSION}") {
		t.Errorf("FROM %q: want a build stage on golang:${GO_VERSION} and a final stage", froms)
	}
	built := false
	for _, run := range d.all("RUN") {
		if strings.Contains(run, "deploy/build-binary.sh /out/riskapi") {
			built = true
		}
	}
	if !built {
		t.Error("the build stage does not run deploy/build-binary.sh, the script CI checks")
	}

	final := d.finalStage()
	if base := final[0].args; base != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("final stage FROM %q", base)
	}
	if users := final.all("USER"); len(users) != 1 || users[0] != strconv.Itoa(nonrootUID)+":"+strconv.Itoa(nonrootUID) {
		t.Errorf("final stage USER %q: want %d:%d", users, nonrootUID, nonrootUID)
	}
	port := listenPort(t, b.envDefaults["RISKAPI_ADDR"])
	if exposed := final.all("EXPOSE"); len(exposed) != 1 || exposed[0] != strconv.Itoa(int(port)) {
		t.Errorf("EXPOSE %q: want the binary's port %d", exposed, port)
	}
	addr := ""
	for _, env := range final.all("ENV") {
		if v, ok := strings.CutPrefix(env, "RISKAPI_ADDR="); ok {
			addr = v
		}
		name, _, _ := strings.Cut(env, "=")
		if !b.envVars[name] {
			t.Errorf("the image sets %s, which the binary never reads", name)
		}
	}
	if addr == "" || strings.HasPrefix(addr, "127.") || listenPort(t, addr) != port {
		t.Errorf("the image's RISKAPI_ADDR=%q: want every interface on port %d", addr, port)
	}
	if e := final.all("ENTRYPOINT"); len(e) != 1 || e[0] != `["/usr/local/bin/riskapi"]` {
		t.Errorf("ENTRYPOINT %q", e)
	}
	if c := final.all("CMD"); len(c) != 1 || c[0] != `["serve"]` || !b.commands["serve"] {
		t.Errorf("CMD %q: want [\"serve\"]", c)
	}
}

package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The production overlay docs/operations.md shows, built on this base as written: it must
// render, and its image, namespace, settings and secrets must replace the base's.
func TestDocumentedOverlay(t *testing.T) {
	docs := readText(t, "docs/operations.md")
	start := strings.Index(docs, "An overlay for production")
	if start < 0 {
		t.Fatal("docs/operations.md shows no production overlay")
	}
	block := regexp.MustCompile(`(?s)\n\n((?:    [^\n]*\n|\n)+?)\n\S`).FindStringSubmatch(docs[start:])
	if block == nil {
		t.Fatal("no indented kustomization.yaml follows \"An overlay for production\"")
	}
	var overlay strings.Builder
	for _, line := range strings.Split(block[1], "\n") {
		overlay.WriteString(strings.TrimPrefix(line, "    ") + "\n")
	}

	fs := filesys.MakeFsInMemory()
	base, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(base, "config.env", "secrets.env") {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile("/deploy/"+name, text); err != nil {
			t.Fatal(err)
		}
	}
	const databaseURL = "postgres://riskapi:s3cret@db.internal:5432/riskapi?sslmode=verify-full"
	files := map[string]string{
		"/overlays/production/kustomization.yaml": overlay.String(),
		"/overlays/production/secrets.env": "RISKAPI_DATABASE_URL=" + databaseURL + "\n" +
			"RISKAPI_REDIS_URL=rediss://:s3cret@redis.internal:6379/0\n" +
			"RISKAPI_SECRET_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	}
	for name, text := range files {
		if err := fs.WriteFile(name, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	m := renderDir(t, fs, "/overlays/production")

	if got := m.deployment.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/riskapi:1.4.0" {
		t.Errorf("the overlay runs image %q", got)
	}
	if got := m.deployment.Spec.Template.Spec.InitContainers[0].Image; got != "registry.example.com/riskapi:1.4.0" {
		t.Errorf("the overlay's migration runs image %q", got)
	}
	if m.deployment.Namespace != "riskapi" || m.secret.Namespace != "riskapi" {
		t.Errorf("namespaces %q and %q: want riskapi", m.deployment.Namespace, m.secret.Namespace)
	}
	if got := string(m.secret.Data["RISKAPI_DATABASE_URL"]); got != databaseURL {
		t.Errorf("the overlay's Secret has RISKAPI_DATABASE_URL %q", got)
	}
	if got := m.config.Data["RISKAPI_PUBLIC_URL"]; got != "https://api.example.com" {
		t.Errorf("the overlay's RISKAPI_PUBLIC_URL is %q", got)
	}
	if got := m.config.Data["RISKAPI_RATE_LIMIT_PROCESSES"]; got == "" {
		t.Error("merging the overlay's settings dropped the base's")
	}
	serve := m.deployment.Spec.Template.Spec.Containers[0]
	for _, from := range serve.EnvFrom {
		if from.SecretRef != nil && from.SecretRef.Name != m.secret.Name {
			t.Errorf("serve reads Secret %q; the overlay's is %q", from.SecretRef.Name, m.secret.Name)
		}
	}
}

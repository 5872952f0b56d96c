package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// manifests are the objects `kubectl apply -k deploy/` creates, decoded into the official
// Kubernetes types.
type manifests struct {
	deployment appsv1.Deployment
	service    corev1.Service
	pdb        policyv1.PodDisruptionBudget
	hpa        autoscalingv2.HorizontalPodAutoscaler
	config     corev1.ConfigMap
	secret     corev1.Secret
}

// render builds the kustomization in this directory as kubectl does and decodes every object
// strictly: a field the Kubernetes API does not know (a typo, a wrong indent, a field of
// another version) fails, as does an object of a kind or apiVersion not expected here, or a
// kind that appears twice.
func render(t *testing.T) *manifests {
	t.Helper()
	return renderDir(t, filesys.MakeFsOnDisk(), ".")
}

// renderDir is render of the kustomization in dir of fs.
func renderDir(t *testing.T, fs filesys.FileSystem, dir string) *manifests {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	var m manifests
	targets := map[string]struct {
		apiVersion string
		into       any
	}{
		"Deployment":              {"apps/v1", &m.deployment},
		"Service":                 {"v1", &m.service},
		"PodDisruptionBudget":     {"policy/v1", &m.pdb},
		"HorizontalPodAutoscaler": {"autoscaling/v2", &m.hpa},
		"ConfigMap":               {"v1", &m.config},
		"Secret":                  {"v1", &m.secret},
	}
	decoded := map[string]bool{}
	for _, r := range resources.Resources() {
		kind, apiVersion := r.GetKind(), r.GetApiVersion()
		target, ok := targets[kind]
		if !ok || target.apiVersion != apiVersion {
			t.Fatalf("unexpected object %s %s %q", apiVersion, kind, r.GetName())
		}
		if decoded[kind] {
			t.Fatalf("two objects of kind %s; the checks expect one", kind)
		}
		decoded[kind] = true
		text, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s %s: %v", kind, r.GetName(), err)
		}
		if err := yaml.UnmarshalStrict(text, target.into); err != nil {
			t.Fatalf("%s %s does not decode strictly into %s: %v", kind, r.GetName(), apiVersion, err)
		}
	}
	for kind := range targets {
		if !decoded[kind] {
			t.Fatalf("the kustomization renders no %s", kind)
		}
	}
	return &m
}

// TestStrictDecodingRefusesUnknownFields shows that render's decoding would catch a
// misplaced field, which plain decoding drops silently.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	doc := []byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  template:
    spec:
      containers:
        - name: x
          readinessProbe:
            path: /readyz
`)
	var d appsv1.Deployment
	if err := yaml.Unmarshal(doc, &d); err != nil {
		t.Fatalf("plain decoding: %v", err)
	}
	if err := yaml.UnmarshalStrict(doc, &d); err == nil {
		t.Fatal("strict decoding accepted readinessProbe.path, a field Probe does not have")
	}
}

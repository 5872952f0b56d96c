package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// nonrootUID is distroless's nonroot user, the Dockerfile's USER.
const nonrootUID = 65532

// secretSettings are the settings that must come from the Secret, never the ConfigMap.
var secretSettings = []string{"RISKAPI_DATABASE_URL", "RISKAPI_REDIS_URL", "RISKAPI_SECRET_KEY"}

// settings is the environment the serve container gets: the ConfigMap's and Secret's keys
// (envFrom) and its own env entries, values where they are plain text.
func settings(m *manifests) map[string]string {
	env := map[string]string{}
	for k, v := range m.config.Data {
		env[k] = v
	}
	for k := range m.secret.Data {
		env[k] = string(m.secret.Data[k])
	}
	for k, v := range m.secret.StringData {
		env[k] = v
	}
	return env
}

func container(t *testing.T, containers []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func TestDeploymentRunsServeAndMigrate(t *testing.T) {
	m, b := render(t), readBinary(t)
	pod := m.deployment.Spec.Template.Spec
	serve := container(t, pod.Containers, "riskapi")
	migrate := container(t, pod.InitContainers, "migrate")
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 1 {
		t.Errorf("want one container and one init container, got %d and %d", len(pod.Containers), len(pod.InitContainers))
	}
	if !slices.Equal(serve.Args, []string{"serve"}) || len(serve.Command) != 0 {
		t.Errorf("the container runs %v %v; want the image's entrypoint with args [serve]", serve.Command, serve.Args)
	}
	if !slices.Equal(migrate.Args, []string{"migrate"}) || len(migrate.Command) != 0 {
		t.Errorf("the init container runs %v %v; want the image's entrypoint with args [migrate]", migrate.Command, migrate.Args)
	}
	for _, c := range []*corev1.Container{serve, migrate} {
		if !b.commands[c.Args[0]] {
			t.Errorf("container %s runs `riskapi %s`, a command the binary does not have", c.Name, c.Args[0])
		}
		if c.Image != serve.Image {
			t.Errorf("container %s runs image %q, the server %q: migrations must come from the same release", c.Name, c.Image, serve.Image)
		}
	}
	if r := m.deployment.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("replicas %v: want at least 2", r)
	}
}

func TestImageIsTheDocumentedOne(t *testing.T) {
	m := render(t)
	docs := readText(t, "docs/operations.md")
	built := regexp.MustCompile("docker build [^`\n]*-t ([a-z0-9./-]+):").FindStringSubmatch(docs)
	if built == nil {
		t.Fatal("docs/operations.md shows no `docker build -t NAME:TAG` command")
	}
	image := m.deployment.Spec.Template.Spec.Containers[0].Image
	repository, tag, _ := strings.Cut(image, ":")
	if repository != built[1] || tag == "" {
		t.Errorf("the Deployment runs %q; docs/operations.md builds %s:<tag>", image, built[1])
	}
	if !strings.Contains(docs, "kustomize edit set image "+built[1]+"=") {
		t.Errorf("docs/operations.md does not say how to point image %s at a registry (kustomize edit set image %s=…)", built[1], built[1])
	}
}

func TestProbesAndPortsMatchTheBinary(t *testing.T) {
	m, b := render(t), readBinary(t)
	serve := container(t, m.deployment.Spec.Template.Spec.Containers, "riskapi")

	defaultPort := listenPort(t, b.envDefaults["RISKAPI_ADDR"])
	if got := listenPort(t, b.setting(t, m.config.Data, "RISKAPI_ADDR")); got != defaultPort {
		t.Errorf("RISKAPI_ADDR listens on %d; the binary's default port is %d", got, defaultPort)
	}
	if addr := m.config.Data["RISKAPI_ADDR"]; strings.HasPrefix(addr, "127.") || strings.HasPrefix(addr, "localhost") {
		t.Errorf("RISKAPI_ADDR=%q listens on loopback only: the kubelet and the Service cannot reach it", addr)
	}
	if len(serve.Ports) != 1 || serve.Ports[0].Name != "http" || serve.Ports[0].ContainerPort != defaultPort {
		t.Fatalf("container ports %+v: want one, named http, %d", serve.Ports, defaultPort)
	}

	probes := []struct {
		name    string
		probe   *corev1.Probe
		handler string
	}{
		{"readinessProbe", serve.ReadinessProbe, "handleReady"},
		{"livenessProbe", serve.LivenessProbe, "handleHealth"},
		{"startupProbe", serve.StartupProbe, "handleHealth"},
	}
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe", p.name)
			continue
		}
		if want := b.routePath(t, p.handler); p.probe.HTTPGet.Path != want {
			t.Errorf("%s probes %s; the binary serves %s at %s", p.name, p.probe.HTTPGet.Path, p.handler, want)
		}
		if port := resolvePort(t, p.probe.HTTPGet.Port, serve); port != defaultPort {
			t.Errorf("%s probes port %d; serve listens on %d", p.name, port, defaultPort)
		}
	}
	// /readyz itself gives up on the store after readyTimeout; the probe must wait longer, or
	// a slow store reads as a probe timeout instead of the handler's 503.
	if got := serve.ReadinessProbe.TimeoutSeconds; int64(got) <= int64(b.readyTimeout.Seconds()) {
		t.Errorf("readinessProbe timeoutSeconds %d: want more than /readyz's own %v", got, b.readyTimeout)
	}

	svcPort := m.service.Spec.Ports
	if len(svcPort) != 1 || resolvePort(t, svcPort[0].TargetPort, serve) != defaultPort {
		t.Errorf("Service ports %+v: want one whose targetPort is the container's %d", svcPort, defaultPort)
	}
}

// resolvePort is the container port a probe or Service port names, by number or by name.
func resolvePort(t *testing.T, port intstr.IntOrString, c *corev1.Container) int32 {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	t.Fatalf("port %q is not a port of container %s", port.StrVal, c.Name)
	return 0
}

func TestRunsAsNonRootOnAReadOnlyFilesystem(t *testing.T) {
	m := render(t)
	pod := m.deployment.Spec.Template.Spec
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Fatal("the pod must set securityContext.runAsNonRoot: true")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != nonrootUID {
		t.Errorf("runAsUser %v: want %d, the image's user", sc.RunAsUser, nonrootUID)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod needs no Kubernetes API token: set automountServiceAccountToken: false")
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		csc := c.SecurityContext
		switch {
		case csc == nil:
			t.Errorf("container %s has no securityContext", c.Name)
		case csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
			t.Errorf("container %s: readOnlyRootFilesystem must be true (on PostgreSQL riskapi writes no files)", c.Name)
		case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
			t.Errorf("container %s: allowPrivilegeEscalation must be false", c.Name)
		case csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}):
			t.Errorf("container %s: drop ALL capabilities", c.Name)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("container %s has no %s request", c.Name, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("container %s has no %s limit", c.Name, r)
			}
		}
	}
	if len(pod.Volumes) != 0 {
		t.Errorf("volumes %v: the pod should need none", pod.Volumes)
	}
}

func TestSelectorsMatchThePods(t *testing.T) {
	m := render(t)
	podLabels := labels.Set(m.deployment.Spec.Template.Labels)
	matches := func(name string, selector *metav1.LabelSelector) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			t.Fatalf("%s selector: %v", name, err)
		}
		if s.Empty() || !s.Matches(podLabels) {
			t.Errorf("%s selector %q does not select the Deployment's pods %v", name, s, podLabels)
		}
	}
	matches("Deployment", m.deployment.Spec.Selector)
	matches("PodDisruptionBudget", m.pdb.Spec.Selector)
	if s := labels.SelectorFromSet(m.service.Spec.Selector); len(m.service.Spec.Selector) == 0 || !s.Matches(podLabels) {
		t.Errorf("Service selector %v does not select the Deployment's pods %v", m.service.Spec.Selector, podLabels)
	}
	if pdb := m.pdb.Spec; pdb.MaxUnavailable == nil && pdb.MinAvailable == nil {
		t.Error("the PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
}

func TestAutoscalerTargetsTheDeployment(t *testing.T) {
	m, b := render(t), readBinary(t)
	hpa := m.hpa.Spec
	ref := hpa.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != m.deployment.Name {
		t.Errorf("the autoscaler targets %s %s %q; want apps/v1 Deployment %q", ref.APIVersion, ref.Kind, ref.Name, m.deployment.Name)
	}
	if hpa.MinReplicas == nil || m.deployment.Spec.Replicas == nil || *hpa.MinReplicas != *m.deployment.Spec.Replicas {
		t.Errorf("minReplicas %v, Deployment replicas %v: keep them equal, so re-applying never scales below the autoscaler's floor", hpa.MinReplicas, m.deployment.Spec.Replicas)
	}
	if hpa.MaxReplicas < 2 || (hpa.MinReplicas != nil && hpa.MaxReplicas < *hpa.MinReplicas) {
		t.Errorf("maxReplicas %d", hpa.MaxReplicas)
	}
	// docs/operations.md: N is the most processes that run at once (with an autoscaler, its
	// maximum); a smaller N lets a Redis outage admit up to processes / N times what was left.
	n, err := strconv.Atoi(b.setting(t, m.config.Data, "RISKAPI_RATE_LIMIT_PROCESSES"))
	if err != nil || int32(n) != hpa.MaxReplicas {
		t.Errorf("RISKAPI_RATE_LIMIT_PROCESSES=%q: want the autoscaler's maxReplicas, %d", m.config.Data["RISKAPI_RATE_LIMIT_PROCESSES"], hpa.MaxReplicas)
	}
	cpu := false
	serve := container(t, m.deployment.Spec.Template.Spec.Containers, "riskapi")
	for _, metric := range hpa.Metrics {
		if metric.Type == "Resource" && metric.Resource != nil && metric.Resource.Name == corev1.ResourceCPU {
			cpu = true
			if _, ok := serve.Resources.Requests[corev1.ResourceCPU]; !ok {
				t.Error("the autoscaler scales on CPU utilization, which needs a CPU request")
			}
		}
	}
	if !cpu {
		t.Errorf("the autoscaler does not scale on CPU: %+v", hpa.Metrics)
	}
}

func TestGracefulShutdownFitsTheGracePeriod(t *testing.T) {
	m, b := render(t), readBinary(t)
	pod := m.deployment.Spec.Template.Spec
	serve := container(t, pod.Containers, "riskapi")
	var preStop int64
	if l := serve.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		preStop = l.PreStop.Sleep.Seconds
	}
	if preStop <= 0 {
		t.Error("the container needs a preStop sleep so it serves while endpoints stop routing to it")
	}
	// After SIGTERM serve waits up to RISKAPI_SHUTDOWN_TIMEOUT for requests in flight, then
	// up to RISKAPI_WEBHOOK_TIMEOUT for webhook attempts in flight; 5 s more to close.
	shutdown := seconds(t, "RISKAPI_SHUTDOWN_TIMEOUT", b.setting(t, m.config.Data, "RISKAPI_SHUTDOWN_TIMEOUT"))
	webhook := seconds(t, "RISKAPI_WEBHOOK_TIMEOUT", b.setting(t, m.config.Data, "RISKAPI_WEBHOOK_TIMEOUT"))
	need := preStop + shutdown + webhook + 5
	var grace int64
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if grace < need {
		t.Errorf("terminationGracePeriodSeconds %d: want at least %d (preStop %d + shutdown %d + webhook timeout %d + 5)", grace, need, preStop, shutdown, webhook)
	}
}

func TestSettingsAreOnesTheBinaryReads(t *testing.T) {
	m, b := render(t), readBinary(t)
	env := settings(m)
	for name := range env {
		if !b.envVars[name] {
			t.Errorf("%s is set in the manifests but the binary never reads it", name)
		}
	}
	// Names in comments and examples too: a misspelt variable in a comment is copied into
	// someone's overlay next.
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "config.env", "secrets.env")
	mention := regexp.MustCompile(`RISKAPI_[A-Z0-9_]+`)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range mention.FindAllString(string(text), -1) {
			if !b.envVars[name] {
				t.Errorf("%s names %s, which the binary never reads", f, name)
			}
		}
	}

	for _, name := range secretSettings {
		if _, ok := m.config.Data[name]; ok {
			t.Errorf("%s is in the ConfigMap; it belongs in the Secret", name)
		}
		if _, ok := m.secret.Data[name]; !ok {
			t.Errorf("the Secret has no %s", name)
		}
	}
	if u := env["RISKAPI_DATABASE_URL"]; !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		t.Errorf("RISKAPI_DATABASE_URL %q: the binary takes only postgres:// URLs", u)
	}
	if u := env["RISKAPI_REDIS_URL"]; !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		t.Errorf("RISKAPI_REDIS_URL %q: the binary takes only redis:// or rediss:// URLs", u)
	}

	// The references kustomize rewrote to the generated (hashed) names resolve.
	pod := m.deployment.Spec.Template.Spec
	// Service links would add RISKAPI_PORT, RISKAPI_SERVICE_HOST… for the Service riskapi,
	// names in the binary's own namespace that nothing here sets.
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("set enableServiceLinks: false: the Service riskapi would add RISKAPI_* variables to every pod")
	}
	serve := container(t, pod.Containers, "riskapi")
	var fromConfig, fromSecret bool
	for _, from := range serve.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			fromConfig = from.ConfigMapRef.Name == m.config.Name
		case from.SecretRef != nil:
			fromSecret = from.SecretRef.Name == m.secret.Name
		}
	}
	if !fromConfig || !fromSecret {
		t.Errorf("serve's envFrom %+v does not name ConfigMap %q and Secret %q", serve.EnvFrom, m.config.Name, m.secret.Name)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, e := range c.Env {
			if !b.envVars[e.Name] {
				t.Errorf("container %s sets %s, which the binary never reads", c.Name, e.Name)
			}
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
				if ref.SecretKeyRef.Name != m.secret.Name {
					t.Errorf("container %s reads %s from Secret %q; the Secret is %q", c.Name, e.Name, ref.SecretKeyRef.Name, m.secret.Name)
				}
				if _, ok := m.secret.Data[ref.SecretKeyRef.Key]; !ok {
					t.Errorf("container %s reads key %s the Secret does not have", c.Name, ref.SecretKeyRef.Key)
				}
			}
		}
	}
}

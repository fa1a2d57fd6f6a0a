package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/plughost/plughost/host/mcp/streamable"
)

// The directory of the manifests, and the files in it that are not
// resources of kustomization.yaml.
const (
	manifestDir    = "../kubernetes"
	kustomization  = "kustomization.yaml"
	secretTemplate = "secret.example.yaml" // applied by hand, never by kubectl apply -k
)

// kinds are the API types the manifests may use; a kind not here fails,
// so a new one is added with its checks.
var kinds = map[string]func() any{
	"v1/ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                     func() any { return new(corev1.Secret) },
	"v1/Service":                    func() any { return new(corev1.Service) },
	"apps/v1/Deployment":            func() any { return new(appsv1.Deployment) },
	"policy/v1/PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
}

// kustomizationFile is the part of kustomize's Kustomization this
// directory uses, decoded strictly: a field kustomize knows and this test
// does not fails until the test learns it.
type kustomizationFile struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Namespace  string      `json:"namespace,omitempty"`
	Resources  []string    `json:"resources"`
	Images     []kustImage `json:"images,omitempty"`
}

// kustImage is one entry of a Kustomization's images.
type kustImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// object is one decoded manifest.
type object struct {
	file string
	kind string // apiVersion/kind, as in kinds
	obj  any    // *corev1.Service, ...
}

func (o object) name() string { return o.meta().Name }

func (o object) meta() *metav1.ObjectMeta {
	switch v := o.obj.(type) {
	case *corev1.ConfigMap:
		return &v.ObjectMeta
	case *corev1.Secret:
		return &v.ObjectMeta
	case *corev1.Service:
		return &v.ObjectMeta
	case *appsv1.Deployment:
		return &v.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return &v.ObjectMeta
	}
	panic(fmt.Sprintf("no metadata for %T", o.obj))
}

// manifests are the decoded objects of kustomization.yaml's resources and
// of the Secret template.
type manifests struct {
	kust    kustomizationFile
	objects []object // resources, in order
	secret  *corev1.Secret
}

// decodeStrict decodes one YAML document into the API type its apiVersion
// and kind name: unknown fields, wrong types, duplicate keys, a missing or
// unknown kind are errors.
func decodeStrict(doc []byte) (kind string, obj any, err error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return "", nil, fmt.Errorf("no apiVersion or kind (%q, %q)", tm.APIVersion, tm.Kind)
	}
	kind = tm.APIVersion + "/" + tm.Kind
	newObj, ok := kinds[kind]
	if !ok {
		return "", nil, fmt.Errorf("kind %s is not one this test knows: add it to kinds, with its checks", kind)
	}
	obj = newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", nil, fmt.Errorf("%s: %w", kind, err)
	}
	return kind, obj, nil
}

// docSep separates the documents of a YAML stream.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeFile decodes every document of a manifest file.
func decodeFile(path string) ([]object, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []object
	for i, doc := range docSep.Split(string(src), -1) {
		if isBlank(doc) {
			continue
		}
		kind, obj, err := decodeStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", filepath.Base(path), i+1, err)
		}
		out = append(out, object{file: filepath.Base(path), kind: kind, obj: obj})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifest", filepath.Base(path))
	}
	return out, nil
}

// isBlank reports whether a YAML document holds only comments and space.
func isBlank(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// loadManifests decodes the directory, failing the test on any error.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{}
	src, err := os.ReadFile(filepath.Join(manifestDir, kustomization))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(src, &m.kust); err != nil {
		t.Fatalf("%s: %v", kustomization, err)
	}
	for _, r := range m.kust.Resources {
		objs, err := decodeFile(filepath.Join(manifestDir, r))
		if err != nil {
			t.Fatal(err)
		}
		m.objects = append(m.objects, objs...)
	}
	objs, err := decodeFile(filepath.Join(manifestDir, secretTemplate))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].kind != "v1/Secret" {
		t.Fatalf("%s must hold one Secret", secretTemplate)
	}
	m.secret = objs[0].obj.(*corev1.Secret)
	return m
}

// find returns the resource of that kind and name.
func (m *manifests) find(kind, name string) (object, bool) {
	for _, o := range m.objects {
		if o.kind == kind && o.name() == name {
			return o, true
		}
	}
	return object{}, false
}

func (m *manifests) deployments() []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, o := range m.objects {
		if d, ok := o.obj.(*appsv1.Deployment); ok {
			out = append(out, d)
		}
	}
	return out
}

// plughost returns the plughost Deployment and its container.
func (m *manifests) plughost(t *testing.T) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	o, ok := m.find("apps/v1/Deployment", "plughost")
	if !ok {
		t.Fatal("no Deployment named plughost")
	}
	d := o.obj.(*appsv1.Deployment)
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "plughost" {
			return d, &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatal("the plughost Deployment has no container named plughost")
	return nil, nil
}

// TestManifestsDecodeStrictly: kustomization.yaml's resources and the
// Secret template decode strictly into the API types, with valid names,
// and every YAML file of the directory is one of them.
func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	if m.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.kust.Kind != "Kustomization" {
		t.Errorf("%s: apiVersion %q kind %q", kustomization, m.kust.APIVersion, m.kust.Kind)
	}
	if slices.Contains(m.kust.Resources, secretTemplate) {
		t.Errorf("%s lists %s: its placeholders would be applied", kustomization, secretTemplate)
	}
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if base != kustomization && base != secretTemplate && !slices.Contains(m.kust.Resources, base) {
			t.Errorf("%s is in %s but not in %s's resources", base, manifestDir, kustomization)
		}
	}
	seen := map[string]string{}
	for _, o := range append(m.objects, object{file: secretTemplate, kind: "v1/Secret", obj: m.secret}) {
		meta := o.meta()
		key := o.kind + " " + meta.Name
		if prev, dup := seen[key]; dup {
			t.Errorf("%s is defined in %s and %s", key, prev, o.file)
		}
		seen[key] = o.file
		if meta.Namespace != "" {
			t.Errorf("%s: %s sets a namespace; kustomization.yaml's (or kubectl's) should apply", o.file, key)
		}
		nameErrs := validation.IsDNS1123Subdomain(meta.Name)
		if o.kind == "v1/Service" {
			nameErrs = validation.IsDNS1035Label(meta.Name)
		}
		for _, e := range nameErrs {
			t.Errorf("%s: %s: invalid name: %s", o.file, key, e)
		}
		for k, v := range meta.Labels {
			for _, e := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("%s: %s: label %s=%s: %s", o.file, key, k, v, e)
			}
		}
	}
}

// TestStrictDecodingRejects: the decoder this test relies on refuses what
// the API server would (or would silently drop).
func TestStrictDecodingRejects(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"unknown field":       "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  prots: []\n",
		"misplaced field":     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          readinessProbe:\n            path: /readyz\n",
		"wrong type":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: two\n",
		"data not a string":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: [1]\n",
		"duplicate key":       "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  name: y\n",
		"missing kind":        "apiVersion: v1\nmetadata:\n  name: x\n",
		"unknown kind":        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: x\n",
		"kind of another API": "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: x\n",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if kind, _, err := decodeStrict([]byte(doc)); err == nil {
				t.Errorf("decoded as %s without error:\n%s", kind, doc)
			}
		})
	}
}

// podsOf returns the pod labels of the Deployments a selector selects.
func (m *manifests) podsOf(sel labels.Selector) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range m.deployments() {
		if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d)
		}
	}
	return out
}

// containerPort resolves a port (number or name) to a container port of
// the pod spec; 0 when none matches.
func containerPort(spec *corev1.PodSpec, port intstr.IntOrString) int32 {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if port.Type == intstr.String && p.Name == port.StrVal || port.Type == intstr.Int && p.ContainerPort == port.IntVal {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// TestReferencesResolve: each Deployment selects its own pods; each
// Secret and ConfigMap key a workload uses exists; volume mounts name
// volumes; Services and the PodDisruptionBudget select pods, and a
// Service's target port is one of theirs.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range m.objects {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = cm
		}
	}
	secretKeys := map[string]bool{}
	for k := range m.secret.StringData {
		secretKeys[k] = true
	}
	for k := range m.secret.Data {
		secretKeys[k] = true
	}
	secretKey := func(where, name, key string) {
		if name != m.secret.Name {
			t.Errorf("%s: Secret %q is not %s's %q", where, name, secretTemplate, m.secret.Name)
		} else if key != "" && !secretKeys[key] {
			t.Errorf("%s: Secret %s has no key %q", where, name, key)
		}
	}
	configMapKey := func(where, name, key string) {
		cm, ok := configMaps[name]
		switch {
		case !ok:
			t.Errorf("%s: no ConfigMap %q among the resources", where, name)
		case key != "":
			if _, ok := cm.Data[key]; !ok {
				t.Errorf("%s: ConfigMap %s has no key %q", where, name, key)
			}
		}
	}
	for _, d := range m.deployments() {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: its selector %v does not select its own pods (%v)", d.Name, d.Spec.Selector, err)
		}
		spec := &d.Spec.Template.Spec
		volumes := map[string]bool{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = true
			where := "Deployment " + d.Name + " volume " + v.Name
			switch {
			case v.ConfigMap != nil:
				configMapKey(where, v.ConfigMap.Name, "")
				for _, it := range v.ConfigMap.Items {
					configMapKey(where, v.ConfigMap.Name, it.Key)
				}
			case v.Secret != nil:
				secretKey(where, v.Secret.SecretName, "")
				for _, it := range v.Secret.Items {
					secretKey(where, v.Secret.SecretName, it.Key)
				}
			}
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			where := "Deployment " + d.Name + " container " + c.Name
			for _, e := range c.Env {
				if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
					t.Errorf("%s: env %s: %v", where, e.Name, errs)
				}
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					secretKey(where+" env "+e.Name, r.Name, r.Key)
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					configMapKey(where+" env "+e.Name, r.Name, r.Key)
				}
			}
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil {
					secretKey(where+" envFrom", ef.SecretRef.Name, "")
				}
				if ef.ConfigMapRef != nil {
					configMapKey(where+" envFrom", ef.ConfigMapRef.Name, "")
				}
			}
			for _, vm := range c.VolumeMounts {
				if !volumes[vm.Name] {
					t.Errorf("%s: volume mount %s names no volume", where, vm.Name)
				}
			}
			for _, p := range c.Ports {
				if p.Name != "" {
					for _, e := range validation.IsValidPortName(p.Name) {
						t.Errorf("%s: port %s: %s", where, p.Name, e)
					}
				}
			}
			for probeName, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
				if p == nil {
					continue
				}
				var port intstr.IntOrString
				switch {
				case p.HTTPGet != nil:
					port = p.HTTPGet.Port
				case p.TCPSocket != nil:
					port = p.TCPSocket.Port
				default:
					continue
				}
				if containerPort(&corev1.PodSpec{Containers: []corev1.Container{c}}, port) == 0 {
					t.Errorf("%s: the %s probe's port %s is none of the container's", where, probeName, port.String())
				}
			}
		}
	}
	for _, o := range m.objects {
		switch v := o.obj.(type) {
		case *corev1.Service:
			pods := m.podsOf(labels.SelectorFromSet(v.Spec.Selector))
			if len(v.Spec.Selector) == 0 || len(pods) == 0 {
				t.Errorf("Service %s selects no pods of the manifests (selector %v)", v.Name, v.Spec.Selector)
				continue
			}
			for _, p := range v.Spec.Ports {
				for _, d := range pods {
					if containerPort(&d.Spec.Template.Spec, p.TargetPort) == 0 {
						t.Errorf("Service %s port %s: target port %s is none of Deployment %s's", v.Name, p.Name, p.TargetPort.String(), d.Name)
					}
				}
			}
		case *policyv1.PodDisruptionBudget:
			sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
			if err != nil || len(m.podsOf(sel)) == 0 {
				t.Errorf("PodDisruptionBudget %s selects no pods of the manifests (%v)", v.Name, err)
			}
		}
	}
}

// TestServiceAndProbes: the plughost Service is a ClusterIP on port 80 to
// the container's HTTP port, where the probes GET /healthz and /readyz.
func TestServiceAndProbes(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	d, c := m.plughost(t)
	if len(c.Ports) != 1 {
		t.Fatalf("the plughost container has %d ports, want one", len(c.Ports))
	}
	port := c.Ports[0].ContainerPort
	probes := map[string]*corev1.Probe{streamable.PathReadyz: c.ReadinessProbe, streamable.PathHealthz: c.LivenessProbe}
	for path, p := range probes {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("no HTTP probe of %s", path)
		case p.HTTPGet.Path != path:
			t.Errorf("the probe of %s GETs %s", path, p.HTTPGet.Path)
		case containerPort(&d.Spec.Template.Spec, p.HTTPGet.Port) != port:
			t.Errorf("the probe of %s is on port %s, not the container's %d", path, p.HTTPGet.Port.String(), port)
		case p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP:
			t.Errorf("the probe of %s uses %s; plughost serves plain HTTP", path, p.HTTPGet.Scheme)
		}
	}
	o, ok := m.find("v1/Service", "plughost")
	if !ok {
		t.Fatal("no Service named plughost")
	}
	svc := o.obj.(*corev1.Service)
	if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service plughost is %s, want ClusterIP", svc.Spec.Type)
	}
	if svc.Spec.SessionAffinity != "" && svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("Service plughost sets session affinity %s: 2026-07-28 clients need none", svc.Spec.SessionAffinity)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || containerPort(&d.Spec.Template.Spec, svc.Spec.Ports[0].TargetPort) != port {
		t.Errorf("Service plughost ports %+v, want 80 to the container's %d", svc.Spec.Ports, port)
	}
	if len(m.podsOf(labels.SelectorFromSet(svc.Spec.Selector))) != 1 {
		t.Errorf("Service plughost selects the pods of other Deployments too (selector %v)", svc.Spec.Selector)
	}
	if got := d.Spec.Replicas; got == nil || *got < 2 {
		t.Errorf("the plughost Deployment runs %v replicas, want at least 2", got)
	}
}

// TestPodsAreLockedDown: every pod runs as a non-root user, with no
// capability, no privilege escalation, a read-only root, no service
// account token and none of the node's namespaces; the plughost pod runs as
// the image's user, and its secrets come from the Secret, never from the
// manifest or the command line.
func TestPodsAreLockedDown(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	f, t0 := false, true
	for _, d := range m.deployments() {
		spec := &d.Spec.Template.Spec
		psc := spec.SecurityContext
		if psc == nil {
			t.Errorf("Deployment %s: the pod has no securityContext", d.Name)
			continue
		}
		pod := map[string]bool{
			"automountServiceAccountToken: false": eq(spec.AutomountServiceAccountToken, &f),
			"none of the node's namespaces":       !spec.HostNetwork && !spec.HostPID && !spec.HostIPC,
			"no hostPath volume":                  !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil }),
		}
		for name, ok := range pod {
			if !ok {
				t.Errorf("Deployment %s: the pod fails %q", d.Name, name)
			}
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("Deployment %s container %s has no securityContext", d.Name, c.Name)
				continue
			}
			container := map[string]bool{
				"runAsNonRoot":                     eq(psc.RunAsNonRoot, &t0) || eq(sc.RunAsNonRoot, &t0),
				"allowPrivilegeEscalation: false":  eq(sc.AllowPrivilegeEscalation, &f),
				"not privileged":                   sc.Privileged == nil || !*sc.Privileged,
				"readOnlyRootFilesystem":           eq(sc.ReadOnlyRootFilesystem, &t0),
				"capabilities: drop ALL, add none": sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0,
			}
			for name, ok := range container {
				if !ok {
					t.Errorf("Deployment %s container %s fails %q", d.Name, c.Name, name)
				}
			}
		}
	}

	d, c := m.plughost(t)
	if psc := d.Spec.Template.Spec.SecurityContext; psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != dockerfileUID(t) {
		t.Errorf("the plughost pod does not run as the image's uid %d", dockerfileUID(t))
	} else if psc.FSGroup != nil {
		t.Error("the plughost pod sets fsGroup: the kubelet would make Secret files group-readable, which plughost refuses for a key file")
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range []string{"PLUGHOST_TOKEN", "PLUGHOST_STATE_KEY", "PLUGHOST_REDIS_PASSWORD"} {
		e, ok := env[name]
		switch {
		case !ok:
			t.Errorf("$%s is not set", name)
		case e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil:
			t.Errorf("$%s does not come from a Secret", name)
		case e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional:
			t.Errorf("$%s is optional: a replica would start without it", name)
		}
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "token") {
			t.Errorf("the command line carries %q: a token there shows in ps", a)
		}
	}
}

func eq(a, b *bool) bool { return a != nil && b != nil && *a == *b }

// TestSecretTemplateHoldsNoSecret: the template's values are placeholders,
// and its state key one plughost refuses (under 32 bytes), so that a copy
// applied unchanged stops every replica instead of running with a known
// key and token.
func TestSecretTemplateHoldsNoSecret(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	if len(m.secret.Data) > 0 {
		t.Errorf("%s has data; use stringData placeholders", secretTemplate)
	}
	for k, v := range m.secret.StringData {
		if !strings.HasPrefix(v, "REPLACE-ME") {
			t.Errorf("%s: %s = %q is not a REPLACE-ME placeholder", secretTemplate, k, v)
		}
	}
	if v, ok := m.secret.StringData["state-key"]; !ok || len(v) >= 32 {
		t.Errorf("%s: the state-key placeholder %q must be under 32 bytes, which plughost refuses", secretTemplate, v)
	}
}

// TestKustomizationImage: the Deployments' images are kustomize images
// entries (the one place to set the registry and tag) or pinned tags.
func TestKustomizationImage(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	for _, d := range m.deployments() {
		for _, c := range d.Spec.Template.Spec.Containers {
			name, tag, hasTag := strings.Cut(c.Image, ":")
			switch {
			case slices.ContainsFunc(m.kust.Images, func(i kustImage) bool {
				return i.Name == name && (i.NewTag != "" || i.Digest != "")
			}):
			case hasTag && tag != "latest" && tag != "":
			default:
				t.Errorf("Deployment %s container %s: image %q has neither a kustomize images entry with a tag nor a pinned tag", d.Name, c.Name, c.Image)
			}
		}
	}
}

// bytesOf returns a file's content, failing the test when unreadable.
func bytesOf(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

// Package check holds the test of deploy/kubernetes, deploy/Dockerfile and deploy/systemd
// (make deploy-check, part of make test), with what runs without a cluster
// or Docker:
//
//   - every manifest decodes strictly into the Kubernetes API types of
//     k8s.io/api (unknown fields, wrong types, duplicate keys and unknown
//     or missing kinds fail), and kustomization.yaml lists every one;
//   - references resolve: each Secret and ConfigMap key the workloads use
//     exists, Services and the PodDisruptionBudget select pods, ports and
//     probes name the container's port, /healthz and /readyz;
//   - every pod is locked down (non-root, no capability, read-only root,
//     no service account token), the Secret template holds placeholders
//     only, and plughost's secrets come from the Secret;
//   - the plughost container's arguments are flags of the real `plughost
//     serve` (built from this repository), its --config is the mounted
//     ConfigMap, which plughost's own host/config parses, and the pod's
//     grace period outlasts plughost's drain and shutdown;
//   - the Dockerfile agrees with go.mod and the Deployment;
//   - deploy/systemd's unit runs `plughost serve` with its real flags, in
//     the directories systemd makes for it (StateDirectory= and the rest),
//     hardened without the settings that break the sandbox, with exactly
//     the namespaces the sandbox creates; systemd-analyze verify accepts
//     it, alone and with the as-root drop-in, where systemd-analyze exists.
//
// It is its own module so that the Kubernetes libraries never enter
// plughost's.
package check

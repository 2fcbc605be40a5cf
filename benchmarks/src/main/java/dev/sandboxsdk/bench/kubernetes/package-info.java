/**
 * The Kubernetes provider on a real cluster: {@code KubernetesBench}, run by
 * {@code benchmarks/scripts/kubernetes.sh}.
 */
package dev.sandboxsdk.bench.kubernetes;

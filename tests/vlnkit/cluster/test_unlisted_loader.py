"""The job server's class loader (vlnkit/cluster/UnlistedClasspath.java): Beam's own detection of what a job
stages, run in a JVM whose system class loader it is, finds the loader's own jar and nothing of the
classpath it loads from; the classes still come from their jars (their code source says which), and code
that resolves classes through the system class loader (as Flink's client does for a failed job's
exception) finds them."""

from __future__ import annotations

import subprocess

from vlnkit.cluster.java_parts import check_job_server_jars, check_unlisted_loader, unlisted_loader_flags

PROBE = """\
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.util.construction.resources.PipelineResources;

public class Probe {
  public static void main(String[] args) throws Exception {
    for (String staged :
        PipelineResources.detectClassPathResourcesToStage(Probe.class.getClassLoader(), PipelineOptionsFactory.create())) {
      System.out.println("staged " + staged);
    }
    System.out.println("loader " + Probe.class.getClassLoader().getName());
    System.out.println("source " + PipelineResources.class.getProtectionDomain().getCodeSource().getLocation());
    Class<?> c = Class.forName("org.apache.flink.util.SerializedThrowable", false, ClassLoader.getSystemClassLoader());
    System.out.println("system " + c.getClassLoader().getName());
  }
}
"""


def test_beams_detection_in_the_job_servers_jvm_stages_only_the_loaders_own_jar(tmp_path):
    paths = check_job_server_jars(verify_digests=False)
    core = next(str(j) for j in paths if j.name == "beam-sdks-java-core-2.62.0.jar")
    (tmp_path / "Probe.java").write_text(PROBE)
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-cp", core, "-d", str(classes), str(tmp_path / "Probe.java")], check=True)
    classpath = ":".join([*(str(j) for j in paths), str(classes)])
    done = subprocess.run(
        ["java", *unlisted_loader_flags(classpath), "Probe"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("staged ")] == [f"staged {check_unlisted_loader()}"]
    assert "loader vlnkit-unlisted" in lines and "system vlnkit-unlisted" in lines
    assert any(line.startswith("source file:") and line.endswith("/beam-sdks-java-core-2.62.0.jar") for line in lines)

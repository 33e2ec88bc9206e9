"""Pinned versions agree with each other and with the installed Python packages."""

from __future__ import annotations

from importlib.metadata import version

from icefloe.harness.provision import ivy, versions


def test_pyspark_matches_the_spark_extras() -> None:
    assert version("pyspark") == versions.SPARK
    assert versions.SPARK.startswith(versions.SPARK_BINARY + ".")


def test_maven_urls() -> None:
    url = versions.TRINO_SERVER.url
    assert url.endswith("/io/trino/trino-server-core/476/trino-server-core-476.tar.gz")


def test_ivy_module_lists_every_artifact() -> None:
    xml = ivy.module_xml("kafka-broker", versions.KAFKA_BROKER_MODULES)
    for artifact in versions.KAFKA_BROKER_MODULES:
        assert f'name="{artifact.artifact}" rev="{artifact.version}"' in xml


def test_ivy_module_pins_overrides_after_the_dependencies() -> None:
    from xml.etree import ElementTree

    xml = ivy.module_xml("spark-extras", versions.SPARK_EXTRAS, versions.SPARK_EXTRAS_OVERRIDES)
    dependencies = ElementTree.fromstring(xml).find("dependencies")
    assert dependencies is not None
    children = list(dependencies)
    tags = [child.tag for child in children]
    assert tags == ["dependency"] * len(versions.SPARK_EXTRAS) + ["override"] * len(
        versions.SPARK_EXTRAS_OVERRIDES
    )
    pinned = {(c.get("org"), c.get("module"), c.get("rev")) for c in children[-1:]}
    token = versions.SPARK_EXTRAS_OVERRIDES[0]
    assert pinned == {(token.group, token.artifact, token.version)}


def test_java_ranges_cover_a_pypi_jdk() -> None:
    from icefloe.harness.provision import jdk

    for low_high in versions.JAVA_RANGES.values():
        assert jdk.pypi_jdk_version(low_high)

package dev.sandboxsdk.agent.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class EgressPolicyTest {
  private static final EgressPolicy EXAMPLE = EgressPolicy.builder(EgressPolicy.Mode.ALLOW_LIST)
      .deny("blocked.example.com")
      .allow("*.example.com")
      .allow("api.test:443")
      .allow("ports.test:8000-8999")
      .allow("203.0.113.0/24:443")
      .allow("[2001:db8::/32]:443")
      .build();

  private static InetAddress ip(String s) {
    try {
      return InetAddress.getByName(s);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException(e);
    }
  }

  private static Decision decide(EgressPolicy policy, String host, int port, String... addresses) {
    return policy.decide(host, port, java.util.Arrays.stream(addresses).map(EgressPolicyTest::ip).toList());
  }

  @ParameterizedTest(name = "{0}:{1} -> {3} ({4})")
  @CsvSource({
      // host, port, resolved, allowed, rule
      "www.example.com, 443, 93.184.216.34, true, allow *.example.com",
      "a.b.example.com, 80, 93.184.216.34, true, allow *.example.com",
      "WWW.Example.COM., 80, 93.184.216.34, true, allow *.example.com",
      "example.com, 443, 93.184.216.34, false, no-rule",
      "notexample.com, 443, 93.184.216.34, false, no-rule",
      "blocked.example.com, 443, 93.184.216.34, false, deny blocked.example.com",
      "api.test, 443, 93.184.216.35, true, allow api.test:443",
      "api.test, 80, 93.184.216.35, false, no-rule",
      "ports.test, 8000, 93.184.216.35, true, allow ports.test:8000-8999",
      "ports.test, 8999, 93.184.216.35, true, allow ports.test:8000-8999",
      "ports.test, 9000, 93.184.216.35, false, no-rule",
      "anything.test, 443, 203.0.113.9, true, allow 203.0.113.0/24:443",
      "anything.test, 80, 203.0.113.9, false, no-rule",
      "203.0.113.200, 443, 0.0.0.0, true, allow 203.0.113.0/24:443",
      "[2001:db8::1], 443, 0.0.0.0, true, allow [2001:db8:0:0:0:0:0:0/32]:443",
      "[2001:db9::1], 443, 0.0.0.0, false, no-rule",
      // rebinding: an allowed name that resolves into a blocked range
      "evil.example.com, 443, 127.0.0.1, false, private-address",
      "evil.example.com, 443, 169.254.169.254, false, private-address",
      "evil.example.com, 443, 10.1.2.3, false, private-address",
      "evil.example.com, 443, ::1, false, private-address",
      "evil.example.com, 443, ::ffff:127.0.0.1, false, private-address",
      "evil.example.com, 443, 64:ff9b::a9fe:a9fe, false, private-address",
  })
  void decidesByTheFirstMatchingRule(String host, int port, String resolved, boolean allowed, String rule) {
    Decision d = decide(EXAMPLE, host, port, resolved);
    assertThat(d.allowed()).isEqualTo(allowed);
    assertThat(d.rule()).isEqualTo(rule);
  }

  @ParameterizedTest
  @ValueSource(strings = {"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254",
      "127.0.0.1", "127.255.0.1", "169.254.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255",
      "192.168.1.1", "198.18.0.1", "198.19.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1",
      "255.255.255.255", "::", "::1", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "::10.0.0.1",
      "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::c0a8:101", "2002:7f00:1::1",
      "2002:a9fe:a9fe::1"})
  void blocksBuiltInRangesWhateverTheNameAndTheMode(String address) {
    for (EgressPolicy policy : List.of(EgressPolicy.open(), EgressPolicy.allowList(EgressRule.allow("*.test")))) {
      Decision byName = decide(policy, "host.test", 443, address);
      assertThat(byName.allowed()).as("%s by name in %s", address, policy.mode()).isFalse();
      assertThat(byName.rule()).isEqualTo(Decision.PRIVATE_ADDRESS);
      String literal = address.contains(":") ? "[" + address + "]" : address;
      assertThat(decide(policy, literal, 443).allowed()).as("%s as a literal", address).isFalse();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.15.255.255",
      "172.32.0.1", "192.167.255.255", "198.17.255.255", "198.20.0.1", "223.255.255.255", "2606:4700::1111",
      "::ffff:1.1.1.1", "64:ff9b::101:101"})
  void letsPublicAddressesOutInOpenMode(String address) {
    Decision d = decide(EgressPolicy.open(), "host.test", 443, address);
    assertThat(d.allowed()).as(address).isTrue();
    assertThat(d.rule()).isEqualTo(Decision.MODE_OPEN);
  }

  @ParameterizedTest
  @CsvSource({
      "2130706433, 127.0.0.1", "0177.0.0.1, 127.0.0.1", "0x7f.1, 127.0.0.1", "0x7f000001, 127.0.0.1",
      "127.1, 127.0.0.1", "127.0.1, 127.0.0.1", "0xa9.0xfe.0xa9.0xfe, 169.254.169.254", "2852039166, 169.254.169.254",
      "012.0.0.1, 10.0.0.1", "0, 0.0.0.0", "[::ffff:7f00:1], 127.0.0.1", "[0:0:0:0:0:ffff:127.0.0.1], 127.0.0.1"})
  void readsOddIpLiteralsAsTheAddressTheyDenote(String host, String address) {
    HostNames.Host parsed = HostNames.parse(host);
    assertThat(parsed.isLiteral()).isTrue();
    assertThat(parsed.literal()).isEqualTo(ip(address));
    // no domain rule can name it, and as an address it is blocked in every mode
    assertThatThrownBy(() -> EgressRule.allow("*." + host)).isInstanceOf(IllegalArgumentException.class);
    assertThat(decide(EgressPolicy.open(), host, 80).rule()).isEqualTo(Decision.PRIVATE_ADDRESS);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", ".", "a..b", ".a", "a b", "a%2eb", "exa_mple.com:80", "1.2.3.4.5", "256.1.1.1",
      "0x100000000", "08.1.1.1", "1.2.3.256", "[::1", "fe80::1%eth0", "[fe80::1%25eth0]", "-a.com", "a-.com",
      "xn--a.com\u00e9", "example.999"})
  void refusesInvalidHosts(String host) {
    Decision d = decide(EgressPolicy.open(), host, 80, "1.1.1.1");
    assertThat(d.allowed()).as(host).isFalse();
    assertThat(d.rule()).isEqualTo(Decision.INVALID_HOST);
  }

  @Test
  void normalisesNames() {
    assertThat(HostNames.parse("WWW.Example.COM.").name()).isEqualTo("www.example.com");
    assertThat(HostNames.parse("_dmarc.example.com").name()).isEqualTo("_dmarc.example.com");
    assertThat(HostNames.parse("1.2.3.example").isLiteral()).isFalse();
  }

  @Test
  void anAddressRuleLetsAResolvedBlockedAddressThrough() {
    EgressPolicy policy = EgressPolicy.allowList(EgressRule.allow("upstream.test"), EgressRule.allow("127.0.0.1/32"));
    assertThat(decide(policy, "upstream.test", 8080, "127.0.0.1"))
        .isEqualTo(new Decision(true, "allow 127.0.0.1/32", ip("127.0.0.1")));
    // the address rule allows that address, not its neighbours nor another family's form of it
    assertThat(decide(policy, "upstream.test", 8080, "127.0.0.2").rule()).isEqualTo(Decision.PRIVATE_ADDRESS);
    assertThat(decide(policy, "upstream.test", 8080, "64:ff9b::7f00:1").rule()).isEqualTo(Decision.PRIVATE_ADDRESS);
    // a deny rule ahead of it still wins
    EgressPolicy denied = EgressPolicy.allowList(EgressRule.deny("upstream.test"), EgressRule.allow("127.0.0.1/32"));
    assertThat(decide(denied, "upstream.test", 8080, "127.0.0.1").rule()).isEqualTo("deny upstream.test");
    // and a deny address rule ahead of an allow one
    EgressPolicy order = EgressPolicy.allowList(EgressRule.deny("127.0.0.0/8"), EgressRule.allow("127.0.0.1/32"));
    assertThat(decide(order, "127.0.0.1", 80).rule()).isEqualTo("deny 127.0.0.0/8");
  }

  @Test
  void rulesApplyInOrder() {
    EgressPolicy denyFirst = EgressPolicy.allowList(EgressRule.deny("*.example.com"), EgressRule.allow("a.example.com"));
    EgressPolicy allowFirst = EgressPolicy.allowList(EgressRule.allow("a.example.com"), EgressRule.deny("*.example.com"));
    assertThat(decide(denyFirst, "a.example.com", 443, "93.184.216.34").allowed()).isFalse();
    assertThat(decide(allowFirst, "a.example.com", 443, "93.184.216.34").allowed()).isTrue();
    assertThat(decide(allowFirst, "b.example.com", 443, "93.184.216.34").rule()).isEqualTo("deny *.example.com");
    EgressPolicy open = EgressPolicy.open(EgressRule.deny("93.184.216.0/24"));
    assertThat(decide(open, "example.com", 443, "93.184.216.34").rule()).isEqualTo("deny 93.184.216.0/24");
  }

  @Test
  void modeOffRefusesEverything() {
    EgressPolicy off = new EgressPolicy(EgressPolicy.Mode.OFF, List.of(EgressRule.allow("*.example.com")));
    assertThat(decide(off, "www.example.com", 443, "93.184.216.34").rule()).isEqualTo(Decision.MODE_OFF);
    assertThat(off.decideBeforeResolving(HostNames.parse("www.example.com"), 443)).isPresent();
  }

  @Test
  void usesTheFirstAllowedAddressAndConnectsToIt() {
    EgressPolicy policy = EgressPolicy.allowList(EgressRule.allow("*.example.com"));
    Decision d = decide(policy, "www.example.com", 443, "127.0.0.1", "93.184.216.34");
    assertThat(d.allowed()).isTrue();
    assertThat(d.address()).isEqualTo(ip("93.184.216.34"));
    assertThat(decide(policy, "www.example.com", 443).rule()).isEqualTo(Decision.UNRESOLVABLE);
  }

  @Test
  void refusesBeforeResolvingWhatNoAddressCouldAllow() {
    EgressPolicy byName = EgressPolicy.allowList(EgressRule.allow("api.test"));
    assertThat(byName.decideBeforeResolving(HostNames.parse("other.test"), 443))
        .hasValueSatisfying(d -> assertThat(d.rule()).isEqualTo(Decision.NO_RULE));
    assertThat(byName.decideBeforeResolving(HostNames.parse("api.test"), 443)).isEmpty();
    EgressPolicy withBlock = EgressPolicy.allowList(EgressRule.allow("10.0.0.0/8"));
    assertThat(withBlock.decideBeforeResolving(HostNames.parse("other.test"), 443)).isEmpty();
    EgressPolicy denied = EgressPolicy.open(EgressRule.deny("*.bad.test"));
    assertThat(denied.decideBeforeResolving(HostNames.parse("x.bad.test"), 443))
        .hasValueSatisfying(d -> assertThat(d.rule()).isEqualTo("deny *.bad.test"));
  }

  @Test
  void parsesAndPrintsRules() {
    for (String text : List.of("allow example.com", "deny *.example.com:443", "allow 10.0.0.0/8",
        "allow 203.0.113.7/32:8000-8999", "deny [2001:db8:0:0:0:0:0:0/32]:443", "allow 2001:db8:0:0:0:0:0:0/32")) {
      assertThat(EgressRule.parse(text)).hasToString(text);
    }
    assertThat(EgressRule.allow("203.0.113.7")).hasToString("allow 203.0.113.7/32");
    assertThat(EgressRule.allow("10.1.2.3/8")).isEqualTo(EgressRule.allow("10.0.0.0/8"));
    for (String bad : List.of("2130706433", "0x7f.1/8", "127.1/32", "10/8", "example.com:0", "example.com:2-1",
        "example.com:70000", "*.", "a..b", "1.2.3.4/33", "::1/129", "[::1", "*.2130706433")) {
      assertThatThrownBy(() -> EgressRule.allow(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> EgressRule.parse("permit example.com")).isInstanceOf(IllegalArgumentException.class);
  }
}

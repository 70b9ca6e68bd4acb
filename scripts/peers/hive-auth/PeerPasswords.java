package meshgate.peers;

import javax.security.sasl.AuthenticationException;
import org.apache.hadoop.conf.Configured;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * The HiveServer2 test peer's password check (hive.server2.authentication=CUSTOM, Hive's
 * "Setting Up HiveServer2", Pluggable Authentication Modules): accepts exactly the
 * user:password pairs listed in the hive-site key meshgate.peer.users. Hive builds the
 * provider with Hadoop's ReflectionUtils, which hands a Configured its configuration.
 */
public class PeerPasswords extends Configured implements PasswdAuthenticationProvider {
  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    for (String pair : getConf().getTrimmedStrings("meshgate.peer.users")) {
      if (pair.equals(user + ":" + password)) return;
    }
    throw new AuthenticationException("wrong user or password");
  }
}

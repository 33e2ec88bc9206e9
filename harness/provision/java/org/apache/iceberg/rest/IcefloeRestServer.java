/*
 * icefloe's launcher for the Iceberg REST catalog test server.
 *
 * The stock RESTCatalogServer binds to every interface and logs its catalog properties, which
 * include the S3 secret key. This launcher builds the same catalog from the same CATALOG_*
 * environment variables, binds to one address (rest.host, default 127.0.0.1) and logs no
 * properties. It lives in the server's package to reach its package-private adapter.
 */
package org.apache.iceberg.rest;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class IcefloeRestServer {
  private IcefloeRestServer() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>(RCKUtils.environmentCatalogConfig());
    props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    props.putIfAbsent("jdbc.schema-version", "V1");
    String host = props.getOrDefault("rest.host", "127.0.0.1");
    int port = Integer.parseInt(props.getOrDefault("rest.port", "8181"));

    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
    RESTCatalogAdapter adapter =
        new RESTServerCatalogAdapter(new RESTCatalogServer.CatalogContext(catalog, props));

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    context.insertHandler(new GzipHandler());

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.setStopAtShutdown(true);
    server.start();
    System.out.println("icefloe REST catalog listening on " + host + ":" + port);
    server.join();
  }
}

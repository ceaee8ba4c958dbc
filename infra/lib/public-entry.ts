import { type Duration, Validations } from 'aws-cdk-lib'
import type * as acm from 'aws-cdk-lib/aws-certificatemanager'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2'
import type * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'

export interface PublicEntryProps {
  vpc: ec2.IVpc
  /** Where the load balancer goes: public subnets. */
  subnets: ec2.SubnetSelection
  logsBucket: s3.IBucket
  /** HTTPS with this certificate; plain HTTP without one. */
  certificate: acm.ICertificate | undefined
  /**
   * Who may open the dashboard's listener. Unset: nobody from the internet; operators reach the
   * dashboard through SSM port forwarding into its task instead (docs/operations.md).
   */
  dashboardAllowedCidr: string | undefined
  /**
   * Longer than the server's ping interval (30 s), so the load balancer never closes a quiet but
   * healthy WebSocket between two pings.
   */
  idleTimeout: Duration
}

/**
 * The internet-facing load balancer: browsers' WebSockets on 443 (or 80), the dashboard on its own
 * listener, 8443 (or 8080).
 */
export class PublicEntry extends Construct {
  public readonly loadBalancer: elbv2.ApplicationLoadBalancer
  public readonly syncListener: elbv2.ApplicationListener
  public readonly dashboardListener: elbv2.ApplicationListener
  /** `wss` with a certificate, else `ws`. */
  public readonly secure: boolean
  public readonly dashboardPort: number

  constructor(scope: Construct, id: string, props: PublicEntryProps) {
    super(scope, id)
    this.secure = props.certificate !== undefined
    const securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      description: 'Symphony load balancer: browsers in, sync and dashboard tasks out',
      allowAllOutbound: false,
    })
    Validations.of(securityGroup).acknowledge({
      id: 'AwsSolutions-EC23',
      reason: 'The WebSocket endpoint serves browsers anywhere; tokens, not addresses, decide who gets in.',
    })
    this.loadBalancer = new elbv2.ApplicationLoadBalancer(this, 'LoadBalancer', {
      vpc: props.vpc,
      internetFacing: true,
      vpcSubnets: props.subnets,
      securityGroup,
      idleTimeout: props.idleTimeout,
      dropInvalidHeaderFields: true,
    })
    this.loadBalancer.logAccessLogs(props.logsBucket, 'load-balancer')

    const certificates = props.certificate
      ? [elbv2.ListenerCertificate.fromCertificateManager(props.certificate)]
      : undefined
    const tls = this.secure
      ? {
          protocol: elbv2.ApplicationProtocol.HTTPS,
          certificates,
          sslPolicy: elbv2.SslPolicy.RECOMMENDED_TLS,
        }
      : { protocol: elbv2.ApplicationProtocol.HTTP }
    const notFound = elbv2.ListenerAction.fixedResponse(404, {
      contentType: 'text/plain',
      messageBody: 'not found',
    })

    // The services add their targets as each listener's default action.
    this.syncListener = this.loadBalancer.addListener('Sync', {
      ...tls,
      port: this.secure ? 443 : 80,
      open: true,
    })
    // Prometheus metrics are for the operator's scraper inside the VPC, not for the internet.
    this.syncListener.addAction('HideMetrics', {
      priority: 10,
      conditions: [elbv2.ListenerCondition.pathPatterns(['/metrics', '/metrics/*'])],
      action: notFound,
    })
    if (this.secure) this.loadBalancer.addRedirect({ sourcePort: 80, targetPort: 443 })

    this.dashboardPort = this.secure ? 8443 : 8080
    this.dashboardListener = this.loadBalancer.addListener('Dashboard', {
      ...tls,
      port: this.dashboardPort,
      open: false,
    })
    if (props.dashboardAllowedCidr) {
      securityGroup.addIngressRule(
        ec2.Peer.ipv4(props.dashboardAllowedCidr),
        ec2.Port.tcp(this.dashboardPort),
        'the dashboard, from the allowed range',
      )
    }
  }

  /** `wss://host` (or `ws://`) that clients connect to, `https://host:8443` for the dashboard. */
  urls(domainName: string | undefined): { webSocket: string; dashboard: string } {
    const host = domainName ?? this.loadBalancer.loadBalancerDnsName
    return {
      webSocket: `${this.secure ? 'wss' : 'ws'}://${host}`,
      dashboard: `${this.secure ? 'https' : 'http'}://${host}:${this.dashboardPort}`,
    }
  }
}

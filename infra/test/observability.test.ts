import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { Match, type Template } from 'aws-cdk-lib/assertions'
import type { Dependency } from '../../server/src/ports/dependency-outcomes.js'
import { COLLECTOR_IMAGE, SCRAPE_INTERVAL_SECONDS } from '../lib/observability/collector.js'
import {
  DASHBOARD_METRICS,
  SYNC_DEPENDENCIES,
  SYNC_SERVER_METRIC_NAMES,
  SYNC_SERVER_METRICS,
} from '../lib/observability/metrics.js'
import { databaseFreeStorageFloorBytes, THRESHOLDS } from '../lib/observability/operations.js'
import { SIZES } from '../lib/settings.js'
import { removeSynthesized, synthesize } from './helpers/synthesize.js'
import { type ContainerDefinition, resourcesOf, sampleValue } from './helpers/template-values.js'

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped; the tests read it freely
type Properties = Record<string, any>

/** The collector sidecar of the task whose other container is `main`. */
function collectorBeside(template: Template, main: string): ContainerDefinition & Properties {
  const tasks = resourcesOf(template, 'AWS::ECS::TaskDefinition').map(([, p]) => p as Properties)
  const task = tasks.find((t) => t.ContainerDefinitions.some((c: Properties) => c.Name === main))
  assert.ok(task, `a task with ${main}`)
  const collector = task.ContainerDefinitions.find((c: Properties) => c.Name === 'metrics-collector')
  assert.ok(collector, `a collector beside ${main}`)
  return collector
}

/** The collector's configuration as the container gets it (JSON, which is YAML), references sampled. */
function configOf(collector: Properties): Properties {
  const value = collector.Environment.find((e: Properties) => e.Name === 'AOT_CONFIG_CONTENT')?.Value
  assert.ok(value, 'AOT_CONFIG_CONTENT')
  const text = sampleValue(value)
  assert.ok(!text.includes('$'), 'no $: the collector would expand it as an environment variable')
  return JSON.parse(text)
}

/** The one alarm whose description starts with `description`. */
function alarmLike(template: Template, description: RegExp): Properties {
  const found = resourcesOf(template, 'AWS::CloudWatch::Alarm')
    .map(([, p]) => p as Properties)
    .filter((p) => description.test(p.AlarmDescription))
  assert.equal(found.length, 1, `one alarm matching ${description}`)
  return found[0] as Properties
}

/** The "Alarms" section of docs/operations.md, up to the next heading. */
const operationsTable = (
  readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8').split('\n## Alarms\n')[1] ?? ''
).split('\n## ')[0] as string

const dimensionNames = (alarm: Properties) => (alarm.Dimensions as Properties[]).map((d) => d.Name).sort()
const dimension = (alarm: Properties, name: string) =>
  (alarm.Dimensions as Properties[]).find((d) => d.Name === name)?.Value

describe('metrics, alarms and the operations dashboard (default settings)', () => {
  let template: Template
  before(() => {
    template = synthesize().template
  })
  after(removeSynthesized)

  it('runs a non-essential ADOT collector beside the sync server, scraping its /metrics into the stack’s namespace', () => {
    const collector = collectorBeside(template, 'server')
    assert.equal(collector.Image, COLLECTOR_IMAGE)
    assert.match(collector.Image, /:v\d+\.\d+\.\d+$/, 'a pinned version')
    assert.equal(collector.Essential, false, 'a collector crash never stops the server')
    assert.ok(collector.Cpu <= 128 && collector.Memory <= 128, 'a small share of the task')

    const config = configOf(collector)
    assert.deepEqual(Object.keys(config.receivers), ['prometheus'])
    const [scrape] = config.receivers.prometheus.config.scrape_configs
    assert.equal(scrape.metrics_path, '/metrics')
    assert.deepEqual(scrape.static_configs[0].targets, ['localhost:1234'])
    assert.equal(scrape.static_configs[0].labels.Service, 'sync')
    assert.match(scrape.static_configs[0].labels.ClusterName, /^sample-cluster/)
    assert.equal(config.receivers.prometheus.config.global.scrape_interval, `${SCRAPE_INTERVAL_SECONDS}s`)
    assert.ok(SCRAPE_INTERVAL_SECONDS >= 30 && SCRAPE_INTERVAL_SECONDS <= 60)
    const kept = new RegExp(`^(?:${scrape.metric_relabel_configs[0].regex})$`)
    for (const name of SYNC_SERVER_METRIC_NAMES) assert.ok(kept.test(name), `${name} is kept`)
    assert.ok(!kept.test('process_cpu_seconds_total'), 'nothing else is published')

    const emf = config.exporters.awsemf
    assert.deepEqual(Object.keys(config.exporters), ['awsemf'])
    assert.equal(emf.namespace, 'Symphony/Symphony')
    assert.equal(emf.dimension_rollup_option, 'NoDimensionRollup')
    assert.match(emf.log_group_name, /^sample-syncmetricsemf/)
    const selected = (name: string) =>
      emf.metric_declarations.filter((d: Properties) =>
        d.metric_name_selectors.some((s: string) => new RegExp(s).test(name)),
      )
    for (const metric of SYNC_SERVER_METRICS) {
      const [declaration] = selected(metric.name)
      assert.ok(declaration, `${metric.name} has a declaration`)
      const expected = ['ClusterName', 'Service', ...('label' in metric ? [metric.label] : [])]
      assert.deepEqual(declaration.dimensions, [expected], metric.name)
    }
    assert.deepEqual(config.service.pipelines.metrics.receivers, ['prometheus'])
    assert.deepEqual(config.service.pipelines.metrics.exporters, ['awsemf'])
    for (const processor of config.service.pipelines.metrics.processors)
      assert.ok(config.processors[processor])
  })

  it('runs the same collector beside the dashboard, scraping port 3000 for its named series', () => {
    const collector = collectorBeside(template, 'dashboard')
    assert.equal(collector.Essential, false)
    const config = configOf(collector)
    const [scrape] = config.receivers.prometheus.config.scrape_configs
    assert.equal(scrape.metrics_path, '/metrics')
    assert.deepEqual(scrape.static_configs[0].targets, ['localhost:3000'])
    assert.equal(scrape.static_configs[0].labels.Service, 'dashboard')
    assert.equal(scrape.metric_relabel_configs[0].regex, DASHBOARD_METRICS.map((m) => m.name).join('|'))
    assert.equal(config.exporters.awsemf.namespace, 'Symphony/Symphony')
    assert.deepEqual(config.exporters.awsemf.metric_declarations, [
      {
        dimensions: [['ClusterName', 'Service']],
        metric_name_selectors: DASHBOARD_METRICS.map((m) => `^${m.name}`),
      },
    ])
  })

  it('lets each collector write only to its own EMF log group, which keeps records a week', () => {
    for (const role of ['SyncTaskTaskRole', 'DashboardTaskTaskRole']) {
      const statements = resourcesOf(template, 'AWS::IAM::Policy')
        .map(([, p]) => p as Properties)
        .filter((p) => p.Roles.some((r: Properties) => String(r.Ref).startsWith(role)))
        .flatMap((p) => p.PolicyDocument.Statement as Properties[])
      const logs = statements.filter((s) => JSON.stringify(s.Action).includes('logs:'))
      assert.equal(logs.length, 1, role)
      assert.match(JSON.stringify(logs[0]?.Resource), /MetricsEmf[0-9A-F]{8}","Arn"/, role)
      assert.ok(
        !statements.some((s) => JSON.stringify(s.Action).includes('cloudwatch:PutMetricData')),
        'EMF needs no PutMetricData',
      )
    }
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 })
  })

  it('notifies one SNS topic that refuses plain HTTP; no email subscription unless asked', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1)
    template.resourceCountIs('AWS::SNS::Subscription', 0)
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    })
    const topic = resourcesOf(template, 'AWS::SNS::Topic')[0]?.[0]
    for (const [id, alarm] of resourcesOf(template, 'AWS::CloudWatch::Alarm') as [string, Properties][]) {
      assert.match(
        alarm.AlarmName,
        /^Symphony-[A-Za-z0-9]+$/,
        'named after the stack and the table in docs/operations.md',
      )
      const name = String(alarm.AlarmName).replace(/^Symphony-/, '')
      assert.ok(operationsTable.includes(`\`${name}\``), `docs/operations.md's "Alarms" lists ${name}`)
      assert.deepEqual(alarm.AlarmActions, [{ Ref: topic }], id)
      assert.deepEqual(alarm.OKActions, [{ Ref: topic }], id)
    }
    const outputs = template.findOutputs('*')
    assert.deepEqual(outputs.AlarmTopicArn?.Value, { Ref: topic })
    assert.match(JSON.stringify(outputs.OperationsDashboardUrl?.Value), /#dashboards:name=/)
  })

  const symphony = { Namespace: 'Symphony/Symphony' }
  it('alarms on snapshot failures: any in five minutes', () => {
    const alarm = alarmLike(template, /failed to write a room snapshot/)
    assert.equal(alarm.MetricName, 'symphony_snapshot_failures_total')
    assert.equal(alarm.Namespace, symphony.Namespace)
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service'])
    assert.equal(dimension(alarm, 'Service'), 'sync')
    assert.equal(alarm.Statistic, 'Sum')
    assert.equal(alarm.Period, 300)
    assert.equal(alarm.Threshold, 1)
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
    assert.equal(alarm.TreatMissingData, 'notBreaching')
  })

  it('alarms on the journal backlog: 50 000 unsaved updates on some server for 15 minutes', () => {
    const alarm = alarmLike(template, /^Updates journaled/)
    assert.equal(alarm.MetricName, 'symphony_journal_backlog_updates')
    assert.equal(alarm.Namespace, symphony.Namespace)
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service'])
    assert.equal(alarm.Statistic, 'Maximum')
    assert.equal(alarm.Threshold, THRESHOLDS.journalBacklogUpdates)
    assert.equal(alarm.Threshold, 50_000)
    assert.equal(alarm.EvaluationPeriods * alarm.Period, 900)
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
  })

  it('alarms on event-loop lag p99 ≥ 200 ms for five minutes', () => {
    const alarm = alarmLike(template, /event-loop lag/)
    assert.equal(alarm.MetricName, 'nodejs_eventloop_lag_p99_seconds')
    assert.equal(alarm.Namespace, symphony.Namespace)
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service'])
    assert.equal(alarm.Statistic, 'Maximum')
    assert.equal(alarm.Threshold, 0.2)
    assert.equal(alarm.Period, 60)
    assert.equal(alarm.EvaluationPeriods, 5)
    assert.equal(alarm.DatapointsToAlarm, 5)
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
  })

  it('alarms on update handling p99 ≥ 100 ms for five minutes', () => {
    const alarm = alarmLike(template, /forwarding updates/)
    assert.equal(alarm.MetricName, 'symphony_update_handling_p99_seconds')
    assert.equal(alarm.Namespace, symphony.Namespace)
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service'])
    assert.equal(alarm.Statistic, 'Maximum')
    assert.equal(alarm.Threshold, 0.1)
    assert.equal(alarm.EvaluationPeriods * alarm.Period, 300)
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
  })

  it('alarms on each dependency the servers report down: Minimum of symphony_dependency_up < 1 for three minutes', () => {
    // Every value of the server's Dependency type, and no other (a compile-time check on both sides).
    const serverDependencies: Record<Dependency, true> = {
      registry: true,
      snapshots: true,
      journal: true,
      metadata: true,
    }
    assert.deepEqual([...SYNC_DEPENDENCIES].sort(), Object.keys(serverDependencies).sort())
    const published = SYNC_SERVER_METRICS.find((m) => m.name === 'symphony_dependency_up')
    for (const dependency of SYNC_DEPENDENCIES) {
      const alarm = alarmLike(template, new RegExp(`dependency ${dependency} down`))
      const name = dependency[0]?.toUpperCase() + dependency.slice(1)
      assert.equal(alarm.AlarmName, `Symphony-DependencyDown${name}`)
      assert.equal(alarm.MetricName, 'symphony_dependency_up')
      assert.equal(alarm.Namespace, symphony.Namespace)
      // Exactly the dimension set the collector declares for the series (base two plus its label).
      assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service', published?.label].sort())
      assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service', 'dependency'])
      assert.match(JSON.stringify(dimension(alarm, 'ClusterName')), /Cluster/)
      assert.equal(dimension(alarm, 'Service'), 'sync')
      assert.equal(dimension(alarm, 'dependency'), dependency)
      assert.equal(alarm.Statistic, 'Minimum')
      assert.equal(alarm.Period, 60)
      assert.equal(alarm.EvaluationPeriods, 3)
      assert.equal(alarm.DatapointsToAlarm, 3)
      assert.equal(alarm.Threshold, 1)
      assert.equal(alarm.ComparisonOperator, 'LessThanThreshold')
      assert.equal(alarm.TreatMissingData, 'missing')
    }
  })

  it('pages when no sync server metrics arrive for ten minutes (the heartbeat: missing data breaches)', () => {
    const alarm = alarmLike(template, /No sync server metrics reach CloudWatch/)
    assert.equal(alarm.AlarmName, 'Symphony-MetricsMissing')
    assert.equal(alarm.MetricName, 'symphony_connections')
    assert.equal(alarm.Namespace, symphony.Namespace)
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'Service'])
    assert.equal(dimension(alarm, 'Service'), 'sync')
    assert.equal(alarm.Statistic, 'SampleCount')
    assert.equal(alarm.Period, 300)
    assert.equal(alarm.EvaluationPeriods, 2)
    assert.equal(alarm.DatapointsToAlarm, 2)
    assert.equal(alarm.Threshold, 1)
    assert.equal(alarm.ComparisonOperator, 'LessThanThreshold')
    assert.equal(alarm.TreatMissingData, 'breaching')
  })

  it('alarms on 5xx from the targets and from the load balancer: ten in five minutes', () => {
    for (const [pattern, metric] of [
      [/servers or the dashboard answer/, 'HTTPCode_Target_5XX_Count'],
      [/load balancer itself/, 'HTTPCode_ELB_5XX_Count'],
    ] as const) {
      const alarm = alarmLike(template, pattern)
      assert.equal(alarm.MetricName, metric)
      assert.equal(alarm.Namespace, 'AWS/ApplicationELB')
      assert.deepEqual(dimensionNames(alarm), ['LoadBalancer'])
      assert.equal(alarm.Statistic, 'Sum')
      assert.equal(alarm.Period, 300)
      assert.equal(alarm.Threshold, 10)
      assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
      assert.equal(alarm.TreatMissingData, 'notBreaching')
    }
  })

  it('alarms on unhealthy targets in each target group for three minutes', () => {
    for (const pattern of [/^A sync task fails/, /^A dashboard task fails/]) {
      const alarm = alarmLike(template, pattern)
      assert.equal(alarm.MetricName, 'UnHealthyHostCount')
      assert.equal(alarm.Namespace, 'AWS/ApplicationELB')
      assert.deepEqual(dimensionNames(alarm), ['LoadBalancer', 'TargetGroup'])
      assert.equal(alarm.Statistic, 'Maximum')
      assert.equal(alarm.Threshold, 1)
      assert.equal(alarm.EvaluationPeriods * alarm.Period, 180)
      assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
    }
  })

  it('alarms when the sync service sits at its autoscaling maximum for 15 minutes', () => {
    const alarm = alarmLike(template, /autoscaling maximum/)
    assert.equal(alarm.MetricName, 'RunningTaskCount')
    assert.equal(alarm.Namespace, 'ECS/ContainerInsights')
    assert.deepEqual(dimensionNames(alarm), ['ClusterName', 'ServiceName'])
    assert.match(JSON.stringify(dimension(alarm, 'ServiceName')), /SyncService/)
    assert.equal(alarm.Statistic, 'Minimum')
    assert.equal(alarm.Threshold, SIZES.small.sync.maxTasks)
    assert.equal(alarm.EvaluationPeriods * alarm.Period, 900)
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
  })

  it('alarms on Redis engine CPU and memory at 80 % (the one node of the small size)', () => {
    for (const [pattern, metric] of [
      [/engine thread/, 'EngineCPUUtilization'],
      [/memory limit/, 'DatabaseMemoryUsagePercentage'],
    ] as const) {
      const alarm = alarmLike(template, pattern)
      assert.equal(alarm.MetricName, metric)
      assert.equal(alarm.Namespace, 'AWS/ElastiCache')
      assert.deepEqual(dimensionNames(alarm), ['CacheClusterId', 'CacheNodeId'])
      const [, [group, suffix]] = dimension(alarm, 'CacheClusterId')['Fn::Join']
      assert.match(group.Ref, /^CacheRedis/)
      assert.equal(suffix, '-001', 'the replication group’s first (here only) node')
      assert.equal(dimension(alarm, 'CacheNodeId'), '0001')
      assert.equal(alarm.Statistic, 'Maximum')
      assert.equal(alarm.Threshold, 80)
      assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
    }
  })

  it('alarms on any DynamoDB throttle of the registry, reads and writes', () => {
    for (const kind of ['Read', 'Write']) {
      const alarm = alarmLike(template, new RegExp(`throttles ${kind.toLowerCase()}s`))
      assert.equal(alarm.MetricName, `${kind}ThrottleEvents`)
      assert.equal(alarm.Namespace, 'AWS/DynamoDB')
      assert.deepEqual(dimensionNames(alarm), ['TableName'])
      assert.match(JSON.stringify(dimension(alarm, 'TableName')), /StorageRegistry/)
      assert.equal(alarm.Statistic, 'Sum')
      assert.equal(alarm.Threshold, 1)
      assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold')
      assert.equal(alarm.TreatMissingData, 'notBreaching')
    }
  })

  it('alarms on RDS CPU ≥ 80 % for 15 minutes and free storage under a fixed floor (1 GiB for 20 GiB)', () => {
    const cpu = alarmLike(template, /metadata database is busy/)
    assert.equal(cpu.MetricName, 'CPUUtilization')
    assert.equal(cpu.Namespace, 'AWS/RDS')
    assert.deepEqual(dimensionNames(cpu), ['DBInstanceIdentifier'])
    assert.equal(cpu.Statistic, 'Average')
    assert.equal(cpu.Threshold, 80)
    assert.equal(cpu.EvaluationPeriods * cpu.Period, 900)
    assert.equal(cpu.ComparisonOperator, 'GreaterThanOrEqualToThreshold')

    const storage = alarmLike(template, /nearly out of storage/)
    assert.equal(storage.MetricName, 'FreeStorageSpace')
    assert.equal(storage.Namespace, 'AWS/RDS')
    assert.deepEqual(dimensionNames(storage), ['DBInstanceIdentifier'])
    assert.equal(storage.Statistic, 'Minimum')
    assert.equal(storage.Threshold, 1024 ** 3, '5 % of the small size’s 20 GiB, under the 2 GiB cap')
    assert.equal(storage.ComparisonOperator, 'LessThanThreshold')
    assert.equal(storage.TreatMissingData, 'missing')
    // Below autoscaling's trigger (10 % free) on the first disk, and never more than 2 GiB.
    const gib = 1024 ** 3
    for (const size of [20, 50, 100, 1000]) {
      const floor = databaseFreeStorageFloorBytes(size)
      assert.ok(floor < size * gib * 0.1, `${size} GiB: under autoscaling's trigger`)
      assert.ok(floor <= 2 * gib, `${size} GiB: at most 2 GiB`)
    }
    assert.equal(databaseFreeStorageFloorBytes(50), 2 * gib)
    assert.equal(databaseFreeStorageFloorBytes(100), 2 * gib)
  })

  it('has exactly these alarms, and a dashboard graphing them with connections, rooms and message rates', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 15 + SYNC_DEPENDENCIES.length + 1)
    const [[, dashboard] = []] = resourcesOf(template, 'AWS::CloudWatch::Dashboard') as [string, Properties][]
    const body = JSON.stringify(dashboard?.DashboardBody)
    for (const name of [
      ...SYNC_SERVER_METRIC_NAMES.filter((n) => n !== 'symphony_dependency_up'),
      'RunningTaskCount',
      'HTTPCode_Target_5XX_Count',
      'UnHealthyHostCount',
      'EngineCPUUtilization',
      'DatabaseMemoryUsagePercentage',
      'WriteThrottleEvents',
      'FreeStorageSpace',
    ]) {
      assert.ok(body.includes(name), `the dashboard shows ${name}`)
    }
    assert.match(body, /alarm/, 'the alarms’ states')
    // The servers no longer use Redis pub/sub: no series, alarm or widget of it is left.
    const alarms = JSON.stringify(resourcesOf(template, 'AWS::CloudWatch::Alarm'))
    for (const text of [body, alarms, JSON.stringify(SYNC_SERVER_METRICS)]) {
      assert.doesNotMatch(text, /pubsub/i)
    }
  })
})

describe('operations under other settings', () => {
  after(removeSynthesized)

  it('alarmEmail subscribes the address; a medium Redis alarms on the worst of its two nodes', () => {
    const { template } = synthesize({ alarmEmail: 'ops@example.com', size: 'medium' })
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    })
    const alarm = alarmLike(template, /engine thread/)
    assert.equal(alarm.Threshold, 80)
    const expression = (alarm.Metrics as Properties[]).find((m) => m.Expression)
    assert.match(expression?.Expression, /^MAX\(\[/)
    const members = (alarm.Metrics as Properties[]).filter((m) => m.MetricStat)
    assert.equal(members.length, 2)
    for (const member of members) {
      assert.equal(member.MetricStat.Metric.MetricName, 'EngineCPUUtilization')
      assert.equal(member.MetricStat.Metric.Namespace, 'AWS/ElastiCache')
      assert.equal(member.MetricStat.Stat, 'Maximum')
    }
    const maxed = alarmLike(template, /autoscaling maximum/)
    assert.equal(maxed.Threshold, SIZES.medium.sync.maxTasks)
    const storage = alarmLike(template, /nearly out of storage/)
    assert.equal(storage.Threshold, 2 * 1024 ** 3, 'the 2 GiB cap (5 % of 50 GiB is more)')
  })

  it('with the journal on MemoryDB there is no ElastiCache, so no Redis alarms and no Redis graph', () => {
    const { template } = synthesize({ journalStore: 'memorydb' })
    for (const [id, alarm] of resourcesOf(template, 'AWS::CloudWatch::Alarm')) {
      assert.doesNotMatch(JSON.stringify(alarm), /ElastiCache|Redis/, id)
    }
    template.resourceCountIs('AWS::CloudWatch::Alarm', 15 + SYNC_DEPENDENCIES.length + 1 - 2)
    const [[, dashboard] = []] = resourcesOf(template, 'AWS::CloudWatch::Dashboard') as [string, Properties][]
    const body = JSON.stringify(dashboard?.DashboardBody)
    assert.doesNotMatch(body, /AWS\/ElastiCache|Redis/)
    assert.match(body, /WriteThrottleEvents/, 'the row’s other graph stays')
  })

  it('a fixed fleet (minTasks = maxTasks) has no SyncAtMaxTasks alarm; a scaling one has it', () => {
    const atMax = (t: Template) =>
      resourcesOf(t, 'AWS::CloudWatch::Alarm')
        .map(([, p]) => p as Properties)
        .filter((p) => /autoscaling maximum/.test(p.AlarmDescription))
    const fixed = synthesize({ minTasks: 4, maxTasks: 4 }).template
    assert.equal(atMax(fixed).length, 0)
    fixed.resourceCountIs('AWS::CloudWatch::Alarm', 15 + SYNC_DEPENDENCIES.length + 1 - 1)
    const scaling = synthesize({ minTasks: 4, maxTasks: 5 }).template
    assert.equal(atMax(scaling).length, 1)
    assert.equal(atMax(scaling)[0]?.Threshold, 5)
  })
})

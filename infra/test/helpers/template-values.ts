import type { Template } from 'aws-cdk-lib/assertions'

type CfnValue = string | number | boolean | { [key: string]: unknown } | CfnValue[]

/**
 * A plausible deploy-time value for a CloudFormation expression: joins are joined, references
 * become sample names, ports become numbers. Enough to feed a container's environment to the
 * service's own configuration parser.
 */
export function sampleValue(value: CfnValue): string {
  if (typeof value !== 'object') return String(value)
  if (Array.isArray(value)) return value.map(sampleValue).join(',')
  if ('Fn::Join' in value) {
    const [separator, parts] = value['Fn::Join'] as [string, CfnValue[]]
    return parts.map(sampleValue).join(separator)
  }
  if ('Ref' in value)
    return `sample-${String(value.Ref)
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '')}`
  if ('Fn::GetAtt' in value) {
    const [, attribute] = value['Fn::GetAtt'] as [string, string]
    return attribute.endsWith('Port') ? '6380' : 'sample.internal.example'
  }
  throw new Error(`no sample for ${JSON.stringify(value)}`)
}

export interface ContainerDefinition {
  Name: string
  Environment?: { Name: string; Value: CfnValue }[]
  Secrets?: { Name: string; ValueFrom: CfnValue }[]
  Ulimits?: { Name: string; SoftLimit: number; HardLimit: number }[]
  StopTimeout?: number
  EntryPoint?: string[]
  Command?: string[]
  ReadonlyRootFilesystem?: boolean
  HealthCheck?: { Command: string[] }
}

/** The one container named `name` across the template's task definitions. */
export function containerNamed(template: Template, name: string): ContainerDefinition {
  const tasks = Object.values(template.findResources('AWS::ECS::TaskDefinition'))
  const containers = tasks.flatMap((task) => task.Properties.ContainerDefinitions as ContainerDefinition[])
  const found = containers.filter((container) => container.Name === name)
  if (found.length !== 1) throw new Error(`${found.length} containers named ${name}`)
  return found[0] as ContainerDefinition
}

/** The environment a task would start with: variables sampled, each secret a long random-looking value. */
export function sampleEnvironment(container: ContainerDefinition): Record<string, string> {
  const environment: Record<string, string> = {}
  for (const { Name, Value } of container.Environment ?? []) environment[Name] = sampleValue(Value)
  for (const { Name } of container.Secrets ?? []) environment[Name] = `secret-${'x'.repeat(60)}`
  return environment
}

/** Resources of `type` as [logical id, properties] pairs. */
export function resourcesOf(template: Template, type: string): [string, Record<string, unknown>][] {
  return Object.entries(template.findResources(type)).map(([id, resource]) => [id, resource.Properties ?? {}])
}

// The pure parts of `npm run release` (scripts/release.mjs): its flags, the sha256sum lines and IMAGE.md, the image
// build instructions for Dockerfile.distroless with the commands that find and check the pushed images' digests.

export interface ReleaseOptions {
  /** Where the release files go (default dist/release). */
  readonly out: string;
  /** The controller image repository (default: the kustomize base's `images` name). */
  readonly image: string | undefined;
  /** Package the Helm chart (needs helm: $HELM, on PATH, or built by scripts/build-helm). */
  readonly chart: boolean;
}

export const RELEASE_USAGE = `usage: npm run release -- [--out DIR] [--image REPOSITORY] [--no-chart]

Builds the bundle and writes to DIR (default dist/release):
  agent-controller.mjs, agent-controller.mjs.sha256   the single-file controller and CLI
  agent-controller-<version>.tgz(.sha256)             the Helm chart (when helm is available; --no-chart skips it)
  IMAGE.md                                            how to build, push and pin the images of Dockerfile.distroless
`;

/** Parses the release flags; throws with a one-line reason on a bad one. */
export function parseReleaseArgs(argv: readonly string[]): ReleaseOptions | 'help' {
  let out = 'dist/release';
  let image: string | undefined;
  let chart = true;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq !== -1 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      const v = eq !== -1 && arg.startsWith('--') ? arg.slice(eq + 1) : argv[++i];
      if (v === undefined || v === '') throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--help' || flag === '-h') return 'help';
    else if (flag === '--out') out = value();
    else if (flag === '--image') image = value();
    else if (flag === '--no-chart') chart = false;
    else throw new Error(`unknown argument ${arg}`);
  }
  if (image !== undefined && !/^[a-z0-9]+([._:/-][a-z0-9]+)*$/.test(image))
    throw new Error(`--image ${image}: not an image repository (no tag or digest)`);
  return { out, image, chart };
}

/** One line of `sha256sum` output (text mode: two spaces), which `sha256sum -c` reads back. */
export function sha256sumLine(hex: string, fileName: string): string {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not a SHA-256: ${hex}`);
  if (/[\n\\]/.test(fileName)) throw new Error(`a file name sha256sum would escape: ${fileName}`);
  return `${hex}  ${fileName}\n`;
}

export interface ImageInfo {
  readonly version: string;
  /** The controller image repository, e.g. ghcr.io/re-cinq/agent-controller. */
  readonly repository: string;
  /** SHA-256 of the release's agent-controller.mjs. */
  readonly bundleSha256: string;
  /** The commit the release was built from, when it is a git checkout. */
  readonly commit?: { readonly sha: string; readonly dirty: boolean };
  /** The packaged chart's file name, when there is one. */
  readonly chartFile?: string;
}

/** IMAGE.md: build, push, find the digests, check them, and pin them in Helm and kustomize. */
export function imageMarkdown(info: ImageInfo): string {
  const { version, repository, bundleSha256 } = info;
  const controller = `${repository}:${version}`;
  const init = `${repository}-init:${version}`;
  const source =
    info.commit === undefined
      ? 'this release'
      : `commit ${info.commit.sha}${info.commit.dirty ? ' (with uncommitted changes: rebuild from a clean checkout before publishing)' : ''}`;
  const chart = info.chartFile ?? `agent-controller-${version}.tgz`;
  return `# agent-controller ${version}: images

Build both images from the source tree of ${source}, with \`Dockerfile.distroless\` (Docker with BuildKit).
Its \`build\` stage runs \`npm ci\` and \`npm run build\` from the same sources and \`package-lock.json\` as this
release, and the bundle does not depend on where it is built, so the image holds the same \`agent-controller.mjs\`
as this release: SHA-256 \`${bundleSha256}\` (checked below).

| image | stage | what it is |
|---|---|---|
| \`${controller}\` | default (distroless, nonroot) | the controller; also the run pods' init image |
| \`${init}\` | \`init\` (Debian slim with git, curl, tar) | the run pods' init image for recipes that clone repositories, download skills or restore conversations |

## Build and push

\`\`\`sh
docker build -f Dockerfile.distroless -t ${controller} .
docker build -f Dockerfile.distroless --target init -t ${init} .
docker push ${controller}
docker push ${init}
\`\`\`

## The digests

\`docker push\` prints each digest (\`digest: sha256:…\`). Read them back from the registry:

\`\`\`sh
docker buildx imagetools inspect ${controller} --format '{{json .Manifest.Digest}}'
docker buildx imagetools inspect ${init} --format '{{json .Manifest.Digest}}'
# without buildx, after a push or a pull:
docker image inspect --format '{{index .RepoDigests 0}}' ${controller}
\`\`\`

## Check an image by its digest

Pulling by digest makes Docker verify the content against it; then compare the bundle inside with this release's:

\`\`\`sh
DIGEST=sha256:…   # from above
docker pull ${repository}@$DIGEST
id=$(docker create ${repository}@$DIGEST)
docker cp "$id:/app/agent-controller.mjs" agent-controller.mjs.from-image && docker rm "$id"
echo "${bundleSha256}  agent-controller.mjs.from-image" | sha256sum -c -
docker run --rm ${repository}@$DIGEST version   # prints: agent-controller ${version} (node …)
\`\`\`

The same for the \`init\` image (\`${repository}-init@$DIGEST\`). A bundle that differs means the image was not
built from this release's sources and lockfile.

## Install pinned by digest

Helm (the chart \`${chart}\`, or \`charts/agent-controller\`):

\`\`\`sh
helm install agent-controller ${chart} -n ai-agents \\
  --set image.digest=$DIGEST
# with the init image for the run pods:
#   --set agentImage=${init}@$INIT_DIGEST
\`\`\`

kustomize, in an overlay of \`deploy/\`. Its \`images\` pins the controller container only; \`AGENT_IMAGE\` (the run
pods' init image) is an environment value, so patch it too:

\`\`\`yaml
images:
  - name: ${repository}
    digest: sha256:…
patches:
  - target: { kind: Deployment, name: agent-controller }
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: { name: agent-controller }
      spec:
        template:
          spec:
            containers:
              - name: controller
                env:
                  - { name: AGENT_IMAGE, value: "${repository}@sha256:…" }
\`\`\`

## The single file

\`agent-controller.mjs\` runs on Node >= 20 or Deno 2 without an image:

\`\`\`sh
sha256sum -c agent-controller.mjs.sha256
node agent-controller.mjs controller --kubeconfig ~/.kube/config --namespace agents --install-crds
\`\`\`
`;
}
